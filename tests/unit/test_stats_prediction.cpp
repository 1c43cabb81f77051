#include <doctest/doctest.h>

#include <limits>

#include "stats/prediction.hpp"
#include "util/error.hpp"

using namespace abtrack::stats;

TEST_CASE("stats: prediction vs outcome") {
  const Prediction p{-18, {-25, -15}};
  CHECK(judge_prediction(p, {-22, -17}) == PredictionOutcome::confirmed);
  CHECK(judge_prediction(p, {-25, -15}) == PredictionOutcome::confirmed);  // bounds inclusive
  CHECK(judge_prediction(p, {-20, -10}) == PredictionOutcome::partly);
  CHECK(judge_prediction(p, {-30, -20}) == PredictionOutcome::partly);
  CHECK(judge_prediction(p, {-30, -5}) == PredictionOutcome::partly);   // wider than the range
  CHECK(judge_prediction(p, {-12, -5}) == PredictionOutcome::refuted);  // outside, right sign
  CHECK(judge_prediction(p, {2, 5}) == PredictionOutcome::refuted);     // opposite sign
  CHECK(judge_prediction(p, {-14.9, -14}) == PredictionOutcome::refuted);
  CHECK(judge_prediction(p, {}) == PredictionOutcome::partly);  // unbounded CI
  // A range that straddles 0: the opposite sign refutes even inside the range.
  const Prediction q{-5, {-10, 2}};
  CHECK(judge_prediction(q, {0.5, 1.5}) == PredictionOutcome::refuted);
  CHECK(judge_prediction(q, {-1, 1}) == PredictionOutcome::confirmed);
  // Predicting "no change".
  const Prediction z{0, {-1, 1}};
  CHECK(judge_prediction(z, {-0.5, 0.5}) == PredictionOutcome::confirmed);
  CHECK(to_string(PredictionOutcome::partly) == "partly");
}

TEST_CASE("stats: prediction input errors") {
  CHECK_THROWS_AS(judge_prediction({-18, {-15, -25}}, {-20, -18}), abtrack::Error);
  CHECK_THROWS_AS(judge_prediction({-18, {}}, {-20, -18}), abtrack::Error);
  CHECK_THROWS_AS(judge_prediction({-18, {-25, -15}}, {-10, -20}), abtrack::Error);
  CHECK_THROWS_AS(judge_prediction({std::numeric_limits<double>::quiet_NaN(), {-25, -15}}, {-20, -18}), abtrack::Error);
}
