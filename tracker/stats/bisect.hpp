#pragma once
// The decisions of `abtrack bisect` (docs/statistics.md, "Bisect as a classifier"), pure so that
// they can be simulated: step 0 confirms that bad is worse than good, each later step classifies
// the commit tested as good or bad by measuring it against good *and* bad in the same rounds, and
// a binary search over the commits between them keeps what is known. Every decision is taken on
// an anytime-valid confidence sequence (stats/paired.hpp), so rounds are added until the answer
// is clear without inflating the error rate; a step that runs out of rounds stays undecided, and
// nothing is ever classified on "not significant".
#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "stats/compare.hpp"
#include "stats/interval.hpp"
#include "stats/paired.hpp"

namespace abtrack::stats {

// The prior variance of the standardized effect in a bisect's sequential t analysis: a tested
// commit's contrast is half the regression, about half a round's noise for a regression near the
// noise, which g = 1 expects (bounded from 5 rounds at alpha = 0.05).
inline constexpr double bisect_prior_g = 1.0;

// The classification level of each step: alpha / ceil(log2(commits + 1)), alpha spread over
// the steps a bisect of `commits` commits (good excluded, bad included) is expected to take,
// step 0 included, so that the chance that any of them errs stays near alpha (union bound).
// Throws abtrack::Error (Exit::usage) for alpha outside (0, 1).
double bisect_step_alpha(double alpha, std::size_t commits);

// The fewest rounds (>= 2) after which the sequential interval at `alpha` with prior `g` can be
// bounded: the first look worth taking. Never throws.
std::size_t sequential_first_look(double alpha, double g);

// How many rounds to measure next, `done` having been measured (attempted) and at most
// `max_rounds` allowed: first `first` rounds, then about an eighth more each time, always an even
// number (a revision run reverses its order every other round, so an even batch puts each arm
// first as often as last), never past max_rounds; 0 when max_rounds is reached. Never throws.
std::size_t next_batch(std::size_t done, std::size_t first, std::size_t max_rounds);

// The arms of a step, in the order their rounds list them.
enum class ProbeArm : std::size_t { good = 0, tested = 1, bad = 2 };

// The order of the arms in the rounds of batch `batch` (0-based) of a step: good, tested, bad
// rotated by the batch; a revision run reverses it every other round, so three batches place
// each arm in each position. Never throws.
std::array<ProbeArm, 3> probe_order(std::size_t batch);

// Which rounds hold an outlier invocation, from each round's mean log sample of each arm
// (means[i][k]): one more than 4 robust standard deviations from its arm's median over the rounds
// (the robust sd: 1.4826 times the median absolute deviation of every invocation from its arm's
// median). An arm with more such invocations than a tenth of the rounds (at least one) keeps them
// all: so often, they are how it behaves, not accidents. Nothing is flagged with fewer than 5
// rounds, or when the flags would leave fewer than 2. Never throws.
std::vector<bool> outlier_rounds(const std::vector<std::vector<double>>& means);

// One round of a step: the samples each arm's invocation gave (finite and > 0).
struct ProbeRound {
  std::vector<double> good, tested, bad;
};

// Where the commit tested lies, as far as the rounds can tell.
enum class Side { undecided, good, bad };

// "undecided", "good", "bad". Never throws.
std::string_view to_string(Side side);

// What a step's rounds say of the commit tested.
struct ProbeEstimate {
  Side side = Side::undecided;
  std::size_t rounds = 0;
  bool exact = false;  // every sample of each arm one value in >= 2 rounds: decided by the sign alone
  // The contrast per round, mean ln tested - (mean ln good + mean ln bad) / 2, oriented so that
  // positive is toward bad (sign-flipped for better: higher), with its sequential interval at alpha:
  // the decision is whether that interval lies above or below 0 (the midpoint).
  double contrast = 0;
  Interval contrast_ci;
  double change_pct = 0;   // tested vs good, percent (the rounds' mean log ratio)
  Interval change_ci_pct;  // its sequential interval at alpha; unbounded while too few rounds
  double full_pct = 0;     // bad vs good in the same rounds, percent
  // The position of the commit tested: 0 at good, 1 at bad, (ln tested - ln good) / (ln bad - ln
  // good); its interval is 1/2 + contrast_ci / the regression's mean (the regression taken as
  // known: for display, the decision is the contrast's). NaN / unbounded when bad is not worse here.
  double theta = 0;
  Interval theta_ci;
  PairedBasis basis = PairedBasis::none;
  std::size_t set_aside = 0;  // rounds with an outlier invocation (outlier_rounds), left out of the above
  std::string why;            // when undecided: why (too few rounds, the interval straddles the midpoint)
};

// Classifies the commit tested from its rounds at level alpha with prior g, the rounds with an
// outlier invocation set aside (outlier_rounds). `better` says which direction bad is worse in. Throws abtrack::Error
// (Exit::usage) for a non-finite or non-positive sample, an empty arm in a round, or alpha outside (0, 1).
ProbeEstimate classify_probe(const std::vector<ProbeRound>& rounds, Better better, double alpha,
                             double g = bisect_prior_g);

// What step 0 concludes of bad against good.
enum class Confirmation { undecided, worse, not_worse };

// "undecided", "worse", "not worse". Never throws.
std::string_view to_string(Confirmation c);

// Step 0: bad (each round's b) against good (a), paired by round, with the sequential interval
// (compare_paired with options.sequential set). worse: the change's interval lies entirely beyond
// min_effect in the worse direction (an exact change: beyond min_effect); not_worse: entirely
// below +min_effect in the worse direction (within min_effect, or better); else undecided.
Confirmation confirm_regression(const Comparison& c);

// Why a sequential measurement stopped.
enum class StopReason { decided, max_rounds, budget, no_rounds };

// A step measured until decided: what it concluded and how much it measured.
template <class Estimate>
struct Sequential {
  Estimate estimate{};
  std::size_t attempted = 0;  // rounds asked of `measure` (some may have given no round)
  std::size_t batches = 0;
  StopReason stop = StopReason::max_rounds;
};

// Asks `measure(batch, n, rounds)` for n more rounds (it appends to `rounds` the rounds that gave
// every arm its samples, and returns false, appending nothing, when it may not measure: the
// budget) until `classify_probe` decides at alpha, max_rounds are attempted or measure refuses.
// The first batch is sequential_first_look(alpha, g) rounds (at most max_rounds). no_rounds: the
// first batch gave no round. Throws what measure and classify_probe throw.
Sequential<ProbeEstimate> probe_until_decided(
    const std::function<bool(std::size_t batch, std::size_t n, std::vector<ProbeRound>& rounds)>& measure,
    Better better, double alpha, std::size_t max_rounds, double g = bisect_prior_g);

// Step 0 likewise: rounds of good (a) and bad (b) until confirm_regression decides on
// compare_paired(rounds, options) with options.sequential set, the rounds with an outlier
// invocation set aside (outlier_rounds; a note of the comparison says how many).
Sequential<Comparison> confirm_until_decided(
    const std::function<bool(std::size_t batch, std::size_t n, std::vector<RoundPair>& rounds)>& measure,
    const CompareOptions& options, std::size_t max_rounds);

// The binary search over the commits from good (excluded) to bad (included), indexed 0..n-1:
// commits[lo] is like good (lo = -1: good itself), commits[hi] like bad; skipped ones are
// avoided.
struct BisectSearch {
  std::ptrdiff_t lo = -1, hi = 0;
  std::set<std::ptrdiff_t> skipped;

  explicit BisectSearch(std::size_t commits) : hi(static_cast<std::ptrdiff_t>(commits) - 1) {}
  // The untested commit nearest the middle of (lo, hi), if one is left.
  std::optional<std::ptrdiff_t> pick() const;
  // Records that commit `index` is like good, like bad, or skipped (undecided changes nothing).
  void apply(std::ptrdiff_t index, std::optional<Side> side);
  // Whether the first bad commit is known: hi, right after lo.
  bool found() const { return hi - lo == 1; }
};

}  // namespace abtrack::stats
