// The history: commits with their trailers, names of commits (in git's history and in the
// user's, past abtrack's own commits), first-parent paths.
#include "gitstore/repository.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <git2.h>

#include "gitstore/internal.hpp"
#include "util/error.hpp"

namespace abtrack::gitstore {
namespace fs = std::filesystem;

std::string HistoryEntry::trailer(std::string_view key) const {
  for (const auto& [k, v] : trailers)
    if (k == key) return v;
  return {};
}

namespace {

// The trailers of a commit's message (none when it cannot be parsed).
std::vector<std::pair<std::string, std::string>> trailers_of(git_commit* c) {
  std::vector<std::pair<std::string, std::string>> out;
  git_message_trailer_array arr{};
  const char* msg = git_commit_message(c);
  if (!msg || git_message_trailers(&arr, msg) != 0) {
    git_error_clear();
    return out;
  }
  for (std::size_t i = 0; i < arr.count; ++i) out.emplace_back(arr.trailers[i].key, arr.trailers[i].value);
  git_message_trailer_array_free(&arr);
  return out;
}

// Whether the commit's message has a trailer `key`.
bool has_trailer(git_commit* c, std::string_view key) {
  auto trailers = trailers_of(c);
  return std::any_of(trailers.begin(), trailers.end(), [&](const auto& t) { return t.first == key; });
}

HistoryEntry entry_of(git_commit* c) {
  HistoryEntry e;
  e.commit = hex(*git_commit_id(c));
  if (git_commit_parentcount(c) > 0) e.first_parent = hex(*git_commit_parent_id(c, 0));
  e.time = git_commit_time(c);
  const char* summary = git_commit_summary(c);
  e.subject = summary ? summary : "";
  e.trailers = trailers_of(c);
  return e;
}

}  // namespace

std::optional<std::string> Repository::resolve_in_user_history(const std::string& spec, std::string_view own) const {
  const auto cut = spec.find_first_of("~^");
  if (spec.find("@{") != std::string::npos || spec.find("^{") != std::string::npos ||
      spec.find(':') != std::string::npos)
    return resolve(spec);
  auto base = resolve(spec.substr(0, cut));
  if (!base) return std::nullopt;
  git_oid at = parse_oid(*base);
  // The user's commit at `at`: down the first parents past abtrack's own commits.
  auto users = [&]() -> bool {
    for (;;) {
      Commit c;
      if (git_commit_lookup(c.out(), m_repo, &at) != 0) {
        git_error_clear();
        return false;
      }
      if (!has_trailer(c.get(), own) || git_commit_parentcount(c.get()) == 0) return true;
      at = *git_commit_parent_id(c.get(), 0);
    }
  };
  auto parent = [&](unsigned n) -> bool {
    if (n == 0) return true;
    Commit c;
    if (git_commit_lookup(c.out(), m_repo, &at) != 0 || git_commit_parentcount(c.get()) < n) {
      git_error_clear();
      return false;
    }
    at = *git_commit_parent_id(c.get(), n - 1);
    return true;
  };
  if (!users()) return std::nullopt;
  for (std::size_t i = cut; i < spec.size();) {
    const char op = spec[i++];
    std::size_t digits = i;
    while (digits < spec.size() && std::isdigit(static_cast<unsigned char>(spec[digits]))) ++digits;
    if (op != '~' && op != '^') return std::nullopt;
    if (digits - i > 6) return std::nullopt;
    const unsigned n = digits == i ? 1u : static_cast<unsigned>(std::stoul(spec.substr(i, digits - i)));
    i = digits;
    if (op == '^') {
      if (!parent(n) || !users()) return std::nullopt;
    } else {
      for (unsigned k = 0; k < n; ++k)
        if (!parent(1) || !users()) return std::nullopt;
    }
  }
  return hex(at);
}

std::optional<std::string> Repository::resolve(const std::string& spec) const {
  git_object* obj = nullptr;
  if (spec.empty() || git_revparse_single(&obj, m_repo, spec.c_str()) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  git_object* commit = nullptr;
  int rc = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
  git_object_free(obj);
  if (rc != 0) {
    git_error_clear();
    return std::nullopt;
  }
  std::string out = hex(*git_object_id(commit));
  git_object_free(commit);
  return out;
}

std::optional<std::vector<std::string>> Repository::first_parent_path(const std::string& good,
                                                                      const std::string& bad) const {
  const git_oid stop = parse_oid(good);
  std::vector<std::string> out;
  git_oid at = parse_oid(bad);
  while (!git_oid_equal(&at, &stop)) {
    Commit c;
    check_git(git_commit_lookup(c.out(), m_repo, &at), "reading " + hex(at));
    out.push_back(hex(at));
    if (git_commit_parentcount(c.get()) == 0) return std::nullopt;
    at = *git_commit_parent_id(c.get(), 0);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string Repository::subject(const std::string& commit) const {
  git_oid id;
  Commit c;
  if (git_oid_fromstr(&id, commit.c_str()) != 0 || git_commit_lookup(c.out(), m_repo, &id) != 0) {
    git_error_clear();
    return {};
  }
  const char* s = git_commit_summary(c.get());
  return s ? s : "";
}

std::optional<HistoryEntry> Repository::head_entry() const {
  auto tip = read_tip(m_repo);
  if (!tip.oid) return std::nullopt;
  Commit c;
  check_git(git_commit_lookup(c.out(), m_repo, &*tip.oid), "reading HEAD");
  return entry_of(c.get());
}

std::optional<HistoryEntry> Repository::entry(const std::string& commit) const {
  git_oid id;
  Commit c;
  if (commit.size() != GIT_OID_HEXSZ || git_oid_fromstr(&id, commit.c_str()) != 0 ||
      git_commit_lookup(c.out(), m_repo, &id) != 0) {
    git_error_clear();
    return std::nullopt;
  }
  return entry_of(c.get());
}

std::vector<HistoryEntry> Repository::history(const std::string& key) const {
  std::vector<HistoryEntry> out;
  if (!read_tip(m_repo).oid) return out;
  Revwalk walk;
  check_git(git_revwalk_new(walk.out(), m_repo), "walking the history");
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
  check_git(git_revwalk_push_head(walk.get()), "walking the history");
  git_oid oid;
  while (git_revwalk_next(&oid, walk.get()) == 0) {
    Commit c;
    check_git(git_commit_lookup(c.out(), m_repo, &oid), "reading a commit");
    // Most commits lack the key altogether: passed over before their trailers are parsed.
    const char* msg = git_commit_message(c.get());
    if (!key.empty() && (!msg || !std::strstr(msg, key.c_str()))) continue;
    HistoryEntry e = entry_of(c.get());
    if (!key.empty() && e.trailer(key).empty()) continue;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace abtrack::gitstore
