#include "doc/plot.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "record/compare.hpp"
#include "stats/quantile.hpp"
#include "util/text.hpp"

namespace abtrack::doc {
namespace {

struct Point {
  double x;               // position on the axis (the value, or the index of a categorical value)
  std::string text;       // the axis value as the plan spells it
  double median, lo, hi;  // lo == hi == median without a CI
  std::size_t n = 0;      // samples pooled
  bool ci = false;        // whether the median has a bounded 95% CI (6 samples or more)
};

// Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), minus the
// yellow that vanishes on white; past seven variants the dash pattern tells lines apart.
constexpr std::string_view kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
constexpr std::string_view kDashes[] = {"", "6 3", "2 2", "8 3 2 3"};

constexpr double kPanelHeight = 340, kPlotLeft = 78, kPlotWidth = 480, kPlotTop = 44, kPlotBottom = 282;
constexpr double kCharWidth = 6.4;  // mean advance of an 11 px sans-serif glyph, for sizing the legend
constexpr std::size_t kLegendChars = 40;

// Coordinates with one decimal: enough for a screen, stable across libc versions.
std::string px(double v) { return fmt::format("{:.1f}", v); }
// Values shown to people and kept in data-* attributes: 6 significant digits, never in exponent
// form between 1e-4 and 1e15 (3600000, not 3.6e+06).
std::string num(double v) {
  std::string s = fmt::format("{:.6g}", v);
  if (s.find('e') == std::string::npos || !(std::fabs(v) >= 1e-4 && std::fabs(v) < 1e15)) return s;
  const int digits = std::max(0, 5 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  s = fmt::format("{:.{}f}", v, digits);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// Decodes one UTF-8 sequence at s[i]; returns its code point and length, or -1 when invalid
// (overlong forms and surrogates included).
std::pair<long, std::size_t> decode_utf8(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {c, 1};
  std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return {-1, 1};
  long cp = c & (0x3F >> (len - 1));
  for (std::size_t k = 1; k < len; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {-1, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr long kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {-1, 1};
  return {cp, len};
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); i += decode_utf8(s, i).second) ++n;
  return n;
}

// At most `max` code points, an ellipsis marking the cut.
std::string shorten(std::string_view s, std::size_t max) {
  std::size_t i = 0, n = 0;
  while (i < s.size() && n + 1 < max) i += decode_utf8(s, i).second, ++n;
  if (code_points(s) <= max) return std::string(s);
  return std::string(s.substr(0, i)) + "\xE2\x80\xA6";
}

// Tick positions at 1, 2 or 5 times a power of ten covering [lo, hi], about `want` of them.
std::vector<double> nice_ticks(double lo, double hi, int want) {
  double raw = (hi - lo) / want;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag * (raw / mag < 1.5 ? 1 : raw / mag < 3 ? 2 : raw / mag < 7 ? 5 : 10);
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && out.size() < 50; t += step)
    out.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return out;
}

// The power of ten (a multiple of 3) whose SI prefix suits `v`: 5e+06 -> 6, 0.002 -> -3.
int si_exponent(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  int e = static_cast<int>(std::floor(std::log10(std::fabs(v)) / 3)) * 3;
  // Rounding can carry a mantissa to 1000 (999.9999 k): move it to the next prefix.
  if (std::fabs(std::stod(fmt::format("{:.6g}", v / std::pow(10, e)))) >= 1000) e += 3;
  return std::clamp(e, -12, 15);
}

// A tick label with the SI prefix of 10^e: (5e+06, 6) -> "5 M", (0.002, -3) -> "2 m", (150, 0) -> "150".
std::string si_label(double v, int e) {
  static constexpr std::string_view kPrefixes[] = {"p", "n", "µ", "m", "", "k", "M", "G", "T", "P"};
  if (v == 0) return "0";
  std::string mantissa = fmt::format("{:.6g}", v / std::pow(10, e));
  std::string_view prefix = kPrefixes[(e + 12) / 3];
  return prefix.empty() ? mantissa : mantissa + " " + std::string(prefix);
}

// Ticks of a log10 axis over [lo, hi] (log10 units): each decade, with 2 and 5 between
// when the range is short.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  const double span = hi - lo;
  const std::vector<double> steps = span < 1.2 ? std::vector<double>{1, 1.5, 2, 3, 5, 7}
                                    : span < 3 ? std::vector<double>{1, 2, 5}
                                               : std::vector<double>{1};
  for (double d = std::floor(lo); d <= std::ceil(hi) && out.size() < 50; ++d)
    for (double m : steps) {
      const double t = std::pow(10, d) * m;
      const double l = std::log10(t);
      if (l >= lo - 1e-9 && l <= hi + 1e-9) out.push_back(t);
    }
  return out;
}

// A linear map from a padded data range onto pixels.
struct Scale {
  double d0, d1, p0, p1;
  double operator()(double v) const { return p0 + (v - d0) / (d1 - d0) * (p1 - p0); }
};

Scale padded(double lo, double hi, double pad, double p0, double p1) {
  if (!(hi > lo)) {
    double w = lo == 0 ? 1 : std::fabs(lo) * 0.05;
    return {lo - w, hi + w, p0, p1};
  }
  return {lo - (hi - lo) * pad, hi + (hi - lo) * pad, p0, p1};
}

}  // namespace

std::string plot_path(const plan::Plan& plan) { return plot_path(std::string_view(plan.doc)); }

std::string plot_path(std::string_view doc_path) {
  std::string doc(doc_path);
  auto slash = doc.rfind('/');
  auto dot = doc.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1) && doc.substr(dot) != ".svg")
    return doc.substr(0, dot) + ".svg";
  return doc + ".svg";
}

std::vector<std::string> document_files(std::string_view doc) { return {std::string(doc), plot_path(doc)}; }

std::string plot_link_target(const plan::Plan& plan) {
  std::string p = plot_path(plan);
  auto slash = p.rfind('/');
  std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::size_t plot_x_axis(const plan::Plan& plan) {
  if (plan.model)
    for (std::size_t i = 0; i < plan.axes.size(); ++i)
      if (plan.axes[i].name == plan.model->axis) return i;
  return plan.axes.empty() ? 0 : plan.axes.size() - 1;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    auto [cp, len] = decode_utf8(text, i);
    if (cp < 0 || cp == 0xFFFE || cp == 0xFFFF) out += "\xEF\xBF\xBD";  // not a character XML allows
    else if (cp < 0x20 || cp == 0x7F) out += ' ';
    else if (cp == '&') out += "&amp;";
    else if (cp == '<') out += "&lt;";
    else if (cp == '>') out += "&gt;";
    else if (cp == '"') out += "&quot;";
    else if (cp == '\'') out += "&apos;";
    else out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

bool plan_has_plot(const plan::Plan& plan) {
  return plan.plot && !plan.axes.empty() &&
         std::any_of(plan.metrics.begin(), plan.metrics.end(),
                     [](const plan::Metric& m) { return m.better != plan::Better::none; });
}

namespace {

// The plot's x axis: the plan's axis, numeric (log2 when it spans 8x or more) or categorical.
struct XAxis {
  const plan::Axis* axis = nullptr;
  bool numeric = true, log2 = false;
  double min = 0, max = 0;
  // Where a value of the axis lies: its number (or log2), or its index when categorical.
  double position(const std::string& v) const {
    if (!numeric)
      return static_cast<double>(std::find(axis->values.begin(), axis->values.end(), v) - axis->values.begin());
    double d = *util::parse_double(v);
    return log2 ? std::log2(d) : d;
  }
};

XAxis x_axis(const plan::Axis& axis) {
  XAxis x;
  x.axis = &axis;
  for (const auto& v : axis.values) {
    auto d = util::parse_double(v);
    x.numeric = x.numeric && d && std::isfinite(*d);
  }
  for (std::size_t i = 0; x.numeric && i < axis.values.size(); ++i) {
    double d = *util::parse_double(axis.values[i]);
    x.min = i == 0 ? d : std::min(x.min, d);
    x.max = i == 0 ? d : std::max(x.max, d);
  }
  x.log2 = x.numeric && x.min > 0 && x.max / x.min >= 8;
  return x;
}

// What is drawn: per metric and variant (the cell's other axes), the passing cells' medians.
struct Series {
  std::vector<std::string> variants;                                        // first appearance, plan order
  std::map<std::string, std::map<std::string, std::vector<Point>>> points;  // metric -> variant -> points
};

Series collect_series(const plan::Plan& plan, const std::vector<record::Record>& records,
                      const std::vector<const plan::Metric*>& metrics, std::size_t xi, const XAxis& x) {
  Series out;
  for (const auto& c : record::cells_with_runs(plan, records)) {
    std::vector<std::string> parts;
    for (std::size_t a = 0; a < plan.axes.size(); ++a)
      if (a != xi) parts.push_back(plan.axes[a].name + "=" + c.cell.values[a]);
    std::string variant = parts.empty() ? "" : fmt::format("{}", fmt::join(parts, " "));
    if (std::find(out.variants.begin(), out.variants.end(), variant) == out.variants.end())
      out.variants.push_back(variant);
    if (!c.latest() || c.outcome() != runner::Outcome::pass) continue;
    auto pooled = c.pooled_samples();
    for (const auto* m : metrics) {
      auto it = pooled.find(m->name);
      if (it == pooled.end() || it->second.empty()) continue;
      double med = stats::median(it->second);
      if (!std::isfinite(med)) continue;
      auto ci = stats::median_ci(it->second, 0.95);
      bool bounded = ci.bounded() && std::isfinite(ci.lo) && std::isfinite(ci.hi);
      const auto& xv = c.cell.values[xi];
      out.points[m->name][variant].push_back(
          {x.position(xv), xv, med, bounded ? ci.lo : med, bounded ? ci.hi : med, it->second.size(), bounded});
    }
  }
  return out;
}

std::string legend_label(const std::string& variant, const plan::Metric& m) {
  return variant.empty() ? m.name : variant;
}

// A log y axis when asked (plot: {y: log}), or unless told otherwise when a variant's values
// span more than a decade (a linear axis would flatten its small values into one line).
bool log_y_axis(const plan::Plan& plan, const std::map<std::string, std::vector<Point>>& by_variant, double lo) {
  if (!(lo > 0)) return false;
  if (plan.plot_log_y) return *plan.plot_log_y;
  for (const auto& [variant, pts] : by_variant) {
    double vlo = 0, vhi = 0;
    for (std::size_t k = 0; k < pts.size(); ++k) {
      vlo = k == 0 ? pts[k].lo : std::min(vlo, pts[k].lo);
      vhi = k == 0 ? pts[k].hi : std::max(vhi, pts[k].hi);
    }
    if (vhi > 10 * vlo) return true;
  }
  return false;
}

// One panel's frame: the title, the grid with the y ticks, the x ticks, the axis labels.
struct Panel {
  const plan::Metric* metric = nullptr;
  std::string label;  // the metric with its unit
  double top = 0, y_top = 0, y_bottom = 0, x_right = 0;
  bool log_y = false;
  Scale y_scale{}, x_scale{};
  double y(double v) const { return y_scale(log_y ? std::log10(v) : v); }
};

std::string panel_frame(const Panel& p, const XAxis& x) {
  std::string s;
  s += fmt::format("<g class=\"panel\" data-metric=\"{}\">\n", xml_escape(p.metric->name));
  s += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">{}: median "
      "with 95% CI, {} is better</text>\n",
      px(kPlotLeft + kPlotWidth / 2), px(p.top + 24), xml_escape(p.label), plan::to_string(p.metric->better));
  // Grid and y ticks.
  s += "<g class=\"y-axis\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  // A linear axis labels every tick with one prefix, from its largest (0.5 M, 1 M, 1.5 M); a log
  // axis each with its own (100, 1 k, 10 k).
  const std::vector<double> ticks =
      p.log_y ? log_ticks(p.y_scale.d0, p.y_scale.d1) : nice_ticks(p.y_scale.d0, p.y_scale.d1, 6);
  double largest = 0;
  for (double t : ticks) largest = std::max(largest, std::fabs(t));
  for (double t : ticks) {
    double y = p.y(t);
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/><text x=\"{3}\" y=\"{4}\" text-anchor=\"end\" "
        "stroke=\"none\" fill=\"#333333\">{5}</text>\n",
        px(kPlotLeft), px(y), px(p.x_right), px(kPlotLeft - 6), px(y + 4),
        xml_escape(si_label(t, si_exponent(p.log_y ? t : largest))));
  }
  s += "</g>\n<g class=\"x-axis\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  // Every axis value is a tick; with many values only every k-th is labelled.
  const auto& values = x.axis->values;
  std::size_t every = (values.size() + 11) / 12;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double xp = p.x_scale(x.position(values[i]));
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", px(xp), px(p.y_top), px(p.y_bottom));
    if (i % every == 0)
      s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333333\">{}</text>",
                       px(xp), px(p.y_bottom + 16), xml_escape(shorten(values[i], 16)));
    s += "\n";
  }
  s += "</g>\n";
  s += fmt::format(
      "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#555555\"/>\n",
      px(kPlotLeft), px(p.y_top), px(kPlotWidth), px(p.y_bottom - p.y_top));
  s += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n",
                   px(kPlotLeft + kPlotWidth / 2), px(p.y_bottom + 38), xml_escape(x.axis->name),
                   x.log2 ? " (log scale)" : "");
  s += fmt::format(
      "<text class=\"ylabel\" x=\"0\" y=\"0\" text-anchor=\"middle\" transform=\"translate({} {}) rotate(-90)\">{}</text>\n",
      px(18), px((p.y_top + p.y_bottom) / 2), xml_escape(p.log_y ? p.label + " (log scale)" : p.label));
  return s;
}

// One variant's line and points with their CIs (a tooltip each).
std::string series_svg(const Panel& p, const XAxis& x, const std::string& variant, std::vector<Point> pts,
                       std::string_view colour, const std::string& dash_attr) {
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  std::string s = fmt::format("<g class=\"series\" data-variant=\"{}\" stroke=\"{}\" fill=\"{}\">\n<title>{}</title>\n",
                              xml_escape(variant), colour, colour, xml_escape(legend_label(variant, *p.metric)));
  std::vector<std::string> line;
  for (const auto& pt : pts) line.push_back(px(p.x_scale(pt.x)) + "," + px(p.y(pt.median)));
  s += fmt::format("<polyline class=\"line\" fill=\"none\" stroke-width=\"1.8\"{} points=\"{}\"/>\n", dash_attr,
                   fmt::join(line, " "));
  const std::string& axis = x.axis->name;
  for (const auto& pt : pts) {
    double xp = p.x_scale(pt.x), yp = p.y(pt.median);
    // Without a bounded CI (fewer than 6 samples) the tooltip shows none, not [median, median].
    if (pt.ci)
      s += fmt::format(
          "<g class=\"point\" data-x=\"{}\" data-median=\"{}\" data-lo=\"{}\" data-hi=\"{}\"><title>{}{}{}: median {}, "
          "95% CI [{}, {}]</title>",
          xml_escape(pt.text), num(pt.median), num(pt.lo), num(pt.hi), xml_escape(variant), variant.empty() ? "" : ", ",
          xml_escape(axis + "=" + pt.text), num(pt.median), num(pt.lo), num(pt.hi));
    else
      s += fmt::format(
          "<g class=\"point\" data-x=\"{}\" data-median=\"{}\"><title>{}{}{}: median {} (n={}: no 95% CI below 6 "
          "samples)</title>",
          xml_escape(pt.text), num(pt.median), xml_escape(variant), variant.empty() ? "" : ", ",
          xml_escape(axis + "=" + pt.text), num(pt.median), pt.n);
    if (pt.hi > pt.lo)
      s += fmt::format(
          "<path class=\"ci\" fill=\"none\" stroke-width=\"1.2\" d=\"M{0} {1}V{2}M{3} {1}H{4}M{3} {2}H{4}\"/>", px(xp),
          px(p.y(pt.lo)), px(p.y(pt.hi)), px(xp - 4), px(xp + 4));
    s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.2\" stroke=\"#ffffff\" stroke-width=\"0.8\"/></g>\n", px(xp),
                     px(yp));
  }
  return s + "</g>\n";
}

// One metric's panel: its frame, then the series and the legend in variant order (colours stay
// with a variant across panels).
std::string panel_svg(const plan::Plan& plan, const plan::Metric& m, std::size_t index, const Series& series,
                      const XAxis& x, double legend_x) {
  const auto& by_variant = series.points.at(m.name);
  Panel p;
  p.metric = &m;
  p.label = m.unit.empty() ? m.name : fmt::format("{} ({})", m.name, m.unit);
  p.top = kPanelHeight * static_cast<double>(index);
  p.y_top = p.top + kPlotTop;
  p.y_bottom = p.top + kPlotBottom;
  p.x_right = kPlotLeft + kPlotWidth;
  double lo = 0, hi = 0;
  bool first = true;
  for (const auto& [variant, pts] : by_variant)
    for (const auto& pt : pts) {
      lo = first ? pt.lo : std::min(lo, pt.lo);
      hi = first ? pt.hi : std::max(hi, pt.hi);
      first = false;
    }
  p.log_y = log_y_axis(plan, by_variant, lo);
  p.y_scale = p.log_y ? padded(std::log10(lo), std::log10(hi), 0.08, p.y_bottom, p.y_top)
                      : padded(lo, hi, 0.08, p.y_bottom, p.y_top);
  p.x_scale = x.numeric ? padded(x.log2 ? std::log2(x.min) : x.min, x.log2 ? std::log2(x.max) : x.max, 0.05, kPlotLeft,
                                 p.x_right)
                        : Scale{-0.5, static_cast<double>(x.axis->values.size()) - 0.5, kPlotLeft, p.x_right};

  std::string s = panel_frame(p, x);
  std::string legend;
  double legend_y = p.y_top + 8;
  for (std::size_t vi = 0; vi < series.variants.size(); ++vi) {
    auto it = by_variant.find(series.variants[vi]);
    if (it == by_variant.end()) continue;
    auto colour = kColours[vi % std::size(kColours)];
    auto dash = kDashes[(vi / std::size(kColours)) % std::size(kDashes)];
    std::string dash_attr = dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", dash);
    s += series_svg(p, x, series.variants[vi], it->second, colour, dash_attr);
    legend += fmt::format(
        "<g class=\"entry\" stroke=\"{0}\" fill=\"{0}\"><line x1=\"{1}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" "
        "stroke-width=\"1.8\"{4}/><circle cx=\"{5}\" cy=\"{2}\" r=\"3.2\"/><text x=\"{6}\" y=\"{7}\" stroke=\"none\" "
        "fill=\"#222222\">{8}</text></g>\n",
        colour, px(legend_x), px(legend_y), px(legend_x + 24), dash_attr, px(legend_x + 12), px(legend_x + 30),
        px(legend_y + 4), xml_escape(shorten(legend_label(series.variants[vi], m), kLegendChars)));
    legend_y += 18;
  }
  return s + "<g class=\"legend\">\n" + legend + "</g>\n</g>\n";
}

}  // namespace

std::optional<std::string> plot_svg(const plan::Plan& plan, const std::vector<record::Record>& records) {
  if (plan.axes.empty()) return std::nullopt;
  std::vector<const plan::Metric*> metrics;
  for (const auto& m : plan.metrics)
    if (m.better != plan::Better::none) metrics.push_back(&m);
  if (metrics.empty()) return std::nullopt;

  const std::size_t xi = plot_x_axis(plan);
  const XAxis x = x_axis(plan.axes[xi]);
  const Series series = collect_series(plan, records, metrics, xi, x);
  std::vector<const plan::Metric*> shown;
  for (const auto* m : metrics)
    if (series.points.count(m->name)) shown.push_back(m);
  if (shown.empty()) return std::nullopt;

  std::size_t longest = 0;
  for (const auto* m : shown)
    for (const auto& [variant, pts] : series.points.at(m->name))
      longest = std::max(longest, code_points(legend_label(variant, *m)));
  const double legend_x = kPlotLeft + kPlotWidth + 24;
  const double width =
      std::round(legend_x + 34 + kCharWidth * static_cast<double>(std::min(longest, kLegendChars)) + 16);
  const double height = kPanelHeight * static_cast<double>(shown.size());

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n",
      px(width), px(height));
  s += fmt::format("{}; regenerated with every run -->\n", kPlotMarker);
  s += fmt::format("<title>{}</title>\n", xml_escape(plan.title.empty() ? plan.experiment : plan.title));
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  for (std::size_t mi = 0; mi < shown.size(); ++mi) s += panel_svg(plan, *shown[mi], mi, series, x, legend_x);
  s += "</svg>\n";
  return s;
}

}  // namespace abtrack::doc
