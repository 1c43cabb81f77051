#include "record/cache.hpp"

#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/files.hpp"

namespace abtrack::record {
namespace {

using json = nlohmann::json;
constexpr int kCacheVersion = 1;

json entry(const Record& r) {
  json cell = json::array();
  for (const auto& [k, v] : r.cell) cell.push_back({k, v});
  json samples = json::object();
  for (const auto& [k, v] : r.data.samples) samples[k] = v;
  json gates = json::array();
  for (const auto& g : r.data.gates)
    gates.push_back({g.expression, g.metric, g.evaluated, g.holds, g.worst ? json(*g.worst) : json(nullptr), g.violations});
  return json{{"e", r.experiment}, {"r", r.run}, {"c", cell}, {"o", static_cast<int>(r.data.outcome)}, {"why", r.data.reason},
              {"s", samples}, {"g", gates}, {"code", {r.code.commit, r.code.dirty, r.code.snapshot}}};
}

Record from_entry(const json& j) {
  Record r;
  r.experiment = j.at("e").get<std::string>();
  r.run = j.at("r").get<int>();
  for (const auto& kv : j.at("c")) r.cell.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  r.data.outcome = static_cast<runner::Outcome>(j.at("o").get<int>());
  r.data.reason = j.at("why").get<std::string>();
  for (const auto& [k, v] : j.at("s").items()) r.data.samples[k] = v.get<std::vector<double>>();
  for (const auto& g : j.at("g")) {
    gates::GateResult gr;
    gr.expression = g.at(0).get<std::string>();
    gr.metric = g.at(1).get<std::string>();
    gr.evaluated = g.at(2).get<bool>();
    gr.holds = g.at(3).get<bool>();
    if (g.at(4).is_number()) gr.worst = g.at(4).get<double>();
    gr.violations = g.at(5).get<std::size_t>();
    r.data.gates.push_back(std::move(gr));
  }
  const auto& code = j.at("code");
  r.code.commit = code.at(0).get<std::string>();
  r.code.dirty = code.at(1).get<bool>();
  r.code.snapshot = code.at(2).get<std::string>();
  return r;
}

}  // namespace

std::string to_cache_json(const Record& r) { return entry(r).dump(); }
Record from_cache_json(const std::string& text) { return from_entry(json::parse(text)); }

RecordCache::RecordCache(std::filesystem::path file) : m_file(std::move(file)) {
  std::error_code ec;
  if (!std::filesystem::exists(m_file, ec)) return;
  try {
    auto j = json::parse(util::read_file(m_file));
    if (j.value("version", 0) != kCacheVersion) return;
    for (const auto& [oid, e] : j.at("records").items()) m_records.emplace(oid, from_entry(e));
  } catch (const std::exception&) {
    m_records.clear();  // corrupt: rebuilt from git
  }
}

const Record* RecordCache::find(const std::string& oid) const {
  auto it = m_records.find(oid);
  return it == m_records.end() ? nullptr : &it->second;
}

void RecordCache::insert(const std::string& oid, Record r) {
  m_records.insert_or_assign(oid, std::move(r));
  m_dirty = true;
}

void RecordCache::save() noexcept {
  if (!m_dirty) return;
  try {
    json records = json::object();
    for (const auto& [oid, r] : m_records) records[oid] = entry(r);
    util::write_file_atomic(m_file, json{{"version", kCacheVersion}, {"records", records}}.dump() + "\n");
    m_dirty = false;
  } catch (const std::exception&) {
  }
}

}  // namespace abtrack::record
