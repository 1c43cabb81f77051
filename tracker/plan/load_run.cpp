// The plan keys that say how cells run: axes, revisions, env, artifacts, scale-out, placeholders.
#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "plan/load.hpp"
#include "plan/loader.hpp"
#include "util/files.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace abtrack::plan {
namespace fs = std::filesystem;

void Loader::load_artifacts(const YAML::Node& n, Plan& plan) {
  if (!n.IsSequence()) {
    error(at(n.Mark()),
          "artifacts must be a list of repository-relative paths, e.g. artifacts: ['build/k-{warps}.cubin']");
    return;
  }
  for (const auto& entry : n) {
    YAML::Node e = entry;
    ArtifactOptions options;
    if (entry.IsMap()) {
      auto keys = mapping(entry, {"path", "build_log", "kernel"}, "artifact key");
      if (!keys.count("path")) {
        error(at(entry.Mark()), "an artifact given as a mapping needs 'path'",
              "e.g. {path: build/k.cubin, build_log: build/ptxas.log}");
        continue;
      }
      e = keys.at("path").second;
      if (auto it = keys.find("build_log"); it != keys.end()) {
        auto l = scalar(it->second.second, "build_log");
        if (!l) continue;
        options.build_log = repo_path(it->second.second, *l, "build_log", false);
        if (options.build_log.empty()) continue;
      }
      if (auto it = keys.find("kernel"); it != keys.end()) {
        auto k = scalar(it->second.second, "artifact kernel");
        if (!k) continue;
        auto re = util::compile_regex(*k);
        if (!re) {
          error(at(it->second.second.Mark()),
                fmt::format("the kernel regex of artifact '{}' does not compile: {}", e.Scalar(), re.error()));
          continue;
        }
        options.kernel = *k;
      }
    }
    auto s = scalar(e, "artifact");
    if (!s) continue;
    std::string path = repo_path(e, *s, "artifact", false);
    if (path.empty()) continue;
    if (std::find(plan.artifacts.begin(), plan.artifacts.end(), path) != plan.artifacts.end()) {
      error(at(e.Mark()), fmt::format("artifact '{}' is listed twice", *s));
      continue;
    }
    plan.artifacts.push_back(path);
    plan.artifact_options.push_back(std::move(options));
  }
}

void Loader::load_scale_out(const YAML::Node* jobs, const YAML::Node* gpus, const YAML::Node* executor,
                            const YAML::Node* slurm, Plan& plan) {
  if (gpus) {
    if (!gpus->IsSequence() || gpus->size() == 0) {
      error(at(gpus->Mark()), "gpus must be a non-empty list of GPU ids, e.g. gpus: [0, 1]");
    } else {
      for (const auto& g : *gpus) {
        auto s = scalar(g, "gpu id");
        if (!s) continue;
        if (s->empty() || s->find_first_of(", \t") != std::string::npos)
          error(at(g.Mark()), fmt::format("gpu id '{}' must be one device (a number or a UUID)", *s));
        else if (std::find(plan.gpus.begin(), plan.gpus.end(), *s) != plan.gpus.end())
          error(at(g.Mark()), fmt::format("gpu id '{}' is listed twice", *s));
        else plan.gpus.push_back(*s);
      }
    }
    for (const auto& kv : plan.env)
      if (kv.first == "CUDA_VISIBLE_DEVICES")
        error(at(gpus->Mark()), "gpus and env: CUDA_VISIBLE_DEVICES both choose the GPU",
              "gpus gives each running cell its own CUDA_VISIBLE_DEVICES; remove it from env");
  }
  if (jobs) {
    if (auto v = number(*jobs, "jobs"); v && !(*v >= 1 && *v <= 1024 && std::floor(*v) == *v))
      error(at(jobs->Mark()), fmt::format("jobs must be a whole number from 1 to 1024, not {}", jobs->Scalar()));
    else if (v) plan.jobs = static_cast<int>(*v);
    if (!plan.gpus.empty() && plan.jobs > static_cast<int>(plan.gpus.size()))
      error(at(jobs->Mark()),
            fmt::format("jobs: {} but gpus lists {}; each running cell gets its own GPU", plan.jobs, plan.gpus.size()));
  } else if (!plan.gpus.empty()) {
    plan.jobs = static_cast<int>(plan.gpus.size());
  }
  if (executor) {
    auto s = scalar(*executor, "executor");
    if (s == "local") plan.executor = ExecutorKind::local;
    else if (s == "slurm") plan.executor = ExecutorKind::slurm;
    else if (s)
      error(at(executor->Mark()), fmt::format("executor must be local or slurm, not '{}'{}", *s,
                                              util::suggestion_suffix(*s, {"local", "slurm"})));
  }
  if (slurm) {
    if (!slurm->IsMap()) {
      error(at(slurm->Mark()), "slurm must be a mapping, e.g. slurm: {partition: gpu, gres: 'gpu:1', time: 10}");
    } else {
      auto keys =
          mapping(*slurm, {"partition", "gres", "time", "max_parallel", "account", "extra", "dir"}, "slurm key");
      auto text = [&](const char* k, std::string& dst) {
        if (auto it = keys.find(k); it != keys.end())
          dst = scalar(it->second.second, fmt::format("slurm {}", k)).value_or("");
      };
      text("partition", plan.slurm.partition);
      text("gres", plan.slurm.gres);
      text("time", plan.slurm.time);
      text("account", plan.slurm.account);
      text("dir", plan.slurm.dir);
      if (auto it = keys.find("max_parallel"); it != keys.end()) {
        const auto& n = it->second.second;
        if (auto v = number(n, "slurm max_parallel"); v && !(*v >= 1 && *v <= 100000 && std::floor(*v) == *v))
          error(at(n.Mark()),
                fmt::format("slurm max_parallel must be a whole number from 1 to 100000, not {}", n.Scalar()));
        else if (v) plan.slurm.max_parallel = static_cast<int>(*v);
      }
      if (auto it = keys.find("extra"); it != keys.end()) {
        const auto& n = it->second.second;
        if (n.IsScalar()) {
          plan.slurm.extra.push_back(n.Scalar());
        } else if (n.IsSequence()) {
          for (const auto& e : n)
            if (auto s = scalar(e, "slurm extra argument")) plan.slurm.extra.push_back(*s);
        } else {
          error(at(n.Mark()), "slurm extra must be a list of sbatch arguments, e.g. extra: ['--qos=short']");
        }
      }
    }
  }
  if (plan.executor == ExecutorKind::slurm) {
    if (gpus)
      error(at(gpus->Mark()), "gpus is for the local executor",
            "with executor: slurm, ask for GPUs with slurm: {gres: 'gpu:1'}");
    if (jobs)
      error(at(jobs->Mark()), "jobs is for the local executor", "with executor: slurm, use slurm: {max_parallel: N}");
    std::set<int> ncu_lines;  // a set's metrics share their line: one error for it
    for (const auto& m : plan.metrics)
      if (!m.file.empty())
        error(m.where,
              fmt::format("metric '{}' reads file: {}, which executor: slurm does not support", m.name, m.file),
              "print the value on stdout (a task's stdout travels back in its result file)");
      else if (m.source == Source::ncu && ncu_lines.insert(m.where.line).second)
        error(m.where, fmt::format("metric '{}' is read with ncu, which executor: slurm does not support", m.name),
              "profile with the local executor");
  } else if (slurm) {
    warn(at(slurm->Mark()), "slurm: is used only with executor: slurm");
  }
}

void Loader::load_env(const YAML::Node& n, Plan& plan) {
  if (!n.IsMap()) {
    error(at(n.Mark()), "env must be a mapping of variable names to values");
    return;
  }
  for (auto& [k, v] : ordered(n, "environment variable")) {
    if (!util::is_identifier(k.Scalar())) {
      error(at(k.Mark()), fmt::format("'{}' is not a valid environment variable name", k.Scalar()));
      continue;
    }
    if (auto s = scalar(v, "env." + k.Scalar())) plan.env.emplace_back(k.Scalar(), *s);
  }
}

void Loader::load_revisions(const YAML::Node& n, Plan& plan) {
  if (!n.IsMap() || n.size() == 0) {
    error(at(n.Mark()), "revisions must be a mapping of names to git revisions",
          "e.g. revisions: {base: main, mine: WORKTREE}");
    return;
  }
  Axis axis{std::string(kRevAxis), {}, at(n.Mark())};
  for (auto& [k, v] : ordered(n, "revision")) {
    const std::string name = k.Scalar();
    if (!util::is_identifier(name)) {
      error(
          at(k.Mark()),
          fmt::format("revision name '{}' must be a letter or '_' followed by letters, digits or '_'", name),
          "the name is the value of the rev axis (rev=base); the revision it names goes on the right: base: origin/main");
      continue;
    }
    auto spec = scalar(v, "revision");
    if (!spec) continue;
    if (util::trim(*spec).empty() || has_control(*spec, true) || spec->find_first_of(" \t\n") != std::string::npos) {
      error(
          at(v.Mark()),
          fmt::format("revision '{}' must name one git revision (a branch, tag, commit or HEAD~3) or WORKTREE", name));
      continue;
    }
    plan.revisions.emplace_back(name, *spec);
    axis.values.push_back(name);
  }
  if (!axis.values.empty()) plan.axes.push_back(std::move(axis));
}

void Loader::load_axes(const YAML::Node& n, Plan& plan) {
  if (!n.IsMap() || n.size() == 0) {
    error(at(n.Mark()), "axes must be a non-empty mapping of axis names to lists of values",
          "e.g. axes: {warps: [4, 8], batch: [16, 64]}");
    return;
  }
  for (auto& [k, v] : ordered(n, "axis")) {
    Axis axis{k.Scalar(), {}, at(k.Mark())};
    if (!plan.revisions.empty() && axis.name == kRevAxis) {
      error(at(k.Mark()), "the plan has revisions:, which make the rev axis; an axis cannot be called rev too",
            "name this axis otherwise, or list the code versions under revisions:");
      continue;
    }
    if (!util::is_identifier(axis.name)) {
      error(at(k.Mark()),
            fmt::format("axis name '{}' must be a letter or '_' followed by letters, digits or '_'", axis.name));
      continue;
    }
    if (!v.IsSequence()) {
      error(at(v.Mark()), fmt::format("axis '{}' must be a list of values, e.g. {}: [4, 8]", axis.name, axis.name));
      continue;
    }
    if (v.size() == 0) {
      error(at(v.Mark()), fmt::format("axis '{}' has no values", axis.name));
      continue;
    }
    for (const auto& e : v) {
      if (!e.IsScalar()) {
        error(at(e.Mark()), fmt::format("a value of axis '{}' must be a single value, not {}", axis.name, kind(e)));
        continue;
      }
      if (e.Scalar().find_first_of(std::string_view("\n\r\0", 3)) != std::string::npos) {
        error(at(e.Mark()),
              fmt::format("a value of axis '{}' spans several lines; values must be single lines", axis.name));
        continue;
      }
      if (has_control(e.Scalar(), true)) {
        error(at(e.Mark()),
              fmt::format("a value of axis '{}' holds a control character (an escape, a backspace)", axis.name),
              "values are printed on terminals and in the document: plain text only");
        continue;
      }
      if (std::find(axis.values.begin(), axis.values.end(), e.Scalar()) != axis.values.end()) {
        error(at(e.Mark()), fmt::format("axis '{}' lists '{}' twice", axis.name, e.Scalar()));
        continue;
      }
      axis.values.push_back(e.Scalar());
    }
    if (!axis.values.empty()) plan.axes.push_back(std::move(axis));
  }
  std::size_t total = 1;
  bool more = false;  // past 100000: the product is not worth finishing (it can overflow)
  for (const auto& a : plan.axes) {
    total *= a.values.size();
    if (total > 100000) {
      more = true;
      break;
    }
  }
  if (more) error(at(n.Mark()), "the axes make more than 100000 cells; at most 100000 are supported");
}

std::vector<Loader::Placeholder> Loader::placeholders(std::string_view text) {
  std::vector<Placeholder> out;
  for (std::size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    auto close = text.find('}', open + 1);
    if (close == std::string::npos) break;
    std::string name(text.substr(open + 1, close - open - 1));
    const bool words = name.ends_with(kSplitSuffix);
    if (words) name.resize(name.size() - kSplitSuffix.size());
    if (util::is_identifier(name)) out.push_back({open, name, words});
  }
  return out;
}

std::vector<std::string> Loader::axis_names(const Plan& plan) {
  std::vector<std::string> names;
  for (const auto& a : plan.axes) names.push_back(a.name);
  return names;
}

std::string Loader::placeholder_hint(const Plan& plan, std::string_view text) {
  auto names = axis_names(plan);
  for (const auto& p : placeholders(text)) {
    if (std::find(names.begin(), names.end(), p.name) != names.end()) continue;
    auto near = util::did_you_mean(p.name, names);
    return fmt::format("'{{{}}}' is not an axis{} {{axis}} is replaced by the cell's value (the axes: {})", p.name,
                       near ? fmt::format(", did you mean '{{{}}}'?", *near) : std::string("."),
                       fmt::join(names, ", "));
  }
  return text.find('{') != std::string_view::npos ? "a literal brace in a regex is written \\{" : "";
}

bool Loader::command_position(std::string_view text, std::size_t pos) {
  while (pos > 0 && (text[pos - 1] == ' ' || text[pos - 1] == '\t')) --pos;
  return pos == 0 || std::string_view("\n|;&(`").find(text[pos - 1]) != std::string_view::npos;
}

void Loader::check_placeholders(Plan& plan, const Location& where, const std::string& text) {
  auto names = axis_names(plan);
  std::set<std::string> warned;
  for (const auto& p : placeholders(text)) {
    const std::string written = fmt::format("{{{}{}}}", p.name, p.words ? kSplitSuffix : "");
    auto axis = std::find_if(plan.axes.begin(), plan.axes.end(), [&](const Axis& a) { return a.name == p.name; });
    if (axis == plan.axes.end()) {
      if (auto s = util::did_you_mean(p.name, names))
        warn(where, fmt::format("command has '{}', which is not an axis and is left as it is; did you mean '{{{}{}}}'?",
                                written, *s, p.words ? kSplitSuffix : ""));
      continue;
    }
    // A quoted value with a blank, first in a command, names a program called "gzip -6".
    auto spaced = std::find_if(axis->values.begin(), axis->values.end(), [](const std::string& v) {
      return util::trim(v).find_first_of(" \t") != std::string_view::npos;
    });
    if (p.words || spaced == axis->values.end() || !command_position(text, p.open) || !warned.insert(p.name).second)
      continue;
    warn(where,
         fmt::format(
             "command puts {{{}}} first in a command, and its value '{}' has a blank: it is one shell-quoted word, "
             "so the shell looks for a program named '{}'",
             p.name, *spaced, *spaced),
         fmt::format("write {{{}...}} to split the value into words (each still shell-quoted)", p.name));
  }
}

void Loader::check_build_placeholders(const Plan& plan, const Location& where, const std::string& text) {
  auto names = axis_names(plan);
  std::set<std::string> warned;
  for (const auto& p : placeholders(text)) {
    if (p.open > 0 && text[p.open - 1] == '$') continue;
    const std::string written = fmt::format("{{{}{}}}", p.name, p.words ? kSplitSuffix : "");
    if (!warned.insert(written).second) continue;
    if (std::find(names.begin(), names.end(), p.name) != names.end()) {
      warn(where,
           fmt::format("build has '{}', which is left as it is: the build runs once per code tree, not per cell",
                       written),
           "give what varies per cell to the command (or env:); the build cannot depend on an axis");
    } else if (auto s = util::did_you_mean(p.name, names)) {
      warn(where,
           fmt::format("build has '{}', which is not an axis and is left as it is; did you mean '{{{}{}}}'?", written,
                       *s, p.words ? kSplitSuffix : ""),
           "the build runs once per code tree, not per cell: no {axis} in it is replaced");
    } else {
      warn(
          where, fmt::format("build has '{}', which is not an axis and is left as it is", written),
          "no {name} in build: is replaced (it runs once per code tree, not per cell); write ${NAME} for a shell variable");
    }
  }
}

}  // namespace abtrack::plan
