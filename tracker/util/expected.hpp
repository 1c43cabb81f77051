#pragma once
// A value or the reason there is none, for failures a caller expects and handles (an optional
// file that cannot be read, a regex that does not compile). std::expected is C++23.
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "util/error.hpp"

namespace abtrack {

// Why an Expected holds no value: a message worded as an Error's, and the exit code it gets
// when thrown after all (Expected::value_or_throw).
struct Failure {
  explicit Failure(std::string message, Exit code = Exit::environment) : message(std::move(message)), code(code) {}
  std::string message;
  Exit code;
};

// A T, or the Failure in its place; Expected<> only says whether something worked. value() and
// error() on the wrong alternative throw std::bad_variant_access (a bug, not a failure).
template <class T = std::monostate>
class [[nodiscard]] Expected {
 public:
  Expected() requires std::is_same_v<T, std::monostate> {}
  Expected(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
  Expected(Failure failure) : m_v(std::in_place_index<1>, std::move(failure)) {}

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(m_v); }
  const T& value() const& { return std::get<0>(m_v); }
  T&& value() && { return std::get<0>(std::move(m_v)); }
  const Failure& failure() const { return std::get<1>(m_v); }  // to pass it on: return e.failure();
  const std::string& error() const { return failure().message; }
  Exit code() const { return failure().code; }

  // The value; a failure is thrown as Error(code(), error()).
  T value_or_throw() && {
    if (!ok()) throw Error(code(), error());
    return std::get<0>(std::move(m_v));
  }
  // The value, or `fallback` when there is none.
  T value_or(T fallback) && { return ok() ? std::get<0>(std::move(m_v)) : std::move(fallback); }

 private:
  std::variant<T, Failure> m_v;
};

}  // namespace abtrack
