#pragma once
// A plan's prediction compared with the measured change.
#include <string_view>

#include "stats/interval.hpp"

namespace abtrack::stats {

// A plan's `prediction: {metric, change, range}`, in percent (change: -18%, range: [-25%, -15%]).
struct Prediction {
  double change_pct = 0;
  Interval range_pct;
};

// How the measurement relates to the prediction.
enum class PredictionOutcome {
  confirmed,  // the measured CI lies inside the predicted range
  refuted,    // the measured CI lies outside the range, or wholly on the other side of 0 than the change
  partly,     // the CI overlaps the range without lying inside it
};

// "confirmed", "refuted", "partly". Never throws.
std::string_view to_string(PredictionOutcome outcome);

// Judges a prediction against the measured change's CI (percent, e.g. Comparison::delta_ci_pct):
// refuted when the CI and the range do not overlap, or when the change predicts a sign and the
// whole CI has the other sign; confirmed when range.lo <= ci.lo and ci.hi <= range.hi; partly
// otherwise (an unbounded CI is at best partly).
// Throws abtrack::Error (Exit::usage) when the range is not finite with lo <= hi, the change is
// not finite, or the CI has lo > hi or a NaN end.
PredictionOutcome judge_prediction(const Prediction& prediction, Interval measured_ci_pct);

}  // namespace abtrack::stats
