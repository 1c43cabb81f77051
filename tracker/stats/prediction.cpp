#include "stats/prediction.hpp"

#include <cmath>

#include <fmt/format.h>

#include "util/error.hpp"

namespace abtrack::stats {

std::string_view to_string(PredictionOutcome outcome) {
  switch (outcome) {
    case PredictionOutcome::confirmed: return "confirmed";
    case PredictionOutcome::refuted: return "refuted";
    case PredictionOutcome::partly: return "partly";
  }
  return "?";
}

PredictionOutcome judge_prediction(const Prediction& prediction, Interval measured_ci_pct) {
  const Interval& range = prediction.range_pct;
  if (!range.bounded() || range.lo > range.hi) {
    throw Error(Exit::usage, fmt::format("prediction range [{}%, {}%] is not an interval", range.lo, range.hi));
  }
  if (!std::isfinite(prediction.change_pct)) {
    throw Error(Exit::usage, fmt::format("prediction change {}% is not a number", prediction.change_pct));
  }
  const Interval& ci = measured_ci_pct;
  if (std::isnan(ci.lo) || std::isnan(ci.hi) || ci.lo > ci.hi) {
    throw Error(Exit::usage, fmt::format("measured interval [{}%, {}%] is not an interval", ci.lo, ci.hi));
  }
  if (ci.hi < range.lo || ci.lo > range.hi) return PredictionOutcome::refuted;
  if ((prediction.change_pct < 0 && ci.lo > 0) || (prediction.change_pct > 0 && ci.hi < 0)) {
    return PredictionOutcome::refuted;
  }
  if (range.lo <= ci.lo && ci.hi <= range.hi) return PredictionOutcome::confirmed;
  return PredictionOutcome::partly;
}

}  // namespace abtrack::stats
