#pragma once
// An optional value kept on the heap, for the rarely filled parts of a value that a program
// holds thousands of (a run record's setup, schedule, placement, comparison, warm-up samples...).
#include <memory>
#include <optional>
#include <utility>

namespace abtrack::util {

// Used like std::optional<T> (`if (o)`, `*o`, `o->`, `o = value`, `o.reset()`), and copied
// deeply like it, but one pointer wide: an empty one costs 8 bytes instead of sizeof(T).
// A step at 1000 runs holds 1000 records, and every byte of a record is a page faulted in.
template <class T>
class HeapOptional {
 public:
  HeapOptional() = default;
  HeapOptional(std::nullopt_t) {}
  HeapOptional(const T& v) : m_p(std::make_unique<T>(v)) {}
  HeapOptional(T&& v) : m_p(std::make_unique<T>(std::move(v))) {}
  HeapOptional(const HeapOptional& o) : m_p(o.m_p ? std::make_unique<T>(*o.m_p) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const HeapOptional& o) {
    if (this != &o) m_p = o.m_p ? std::make_unique<T>(*o.m_p) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(std::nullopt_t) {
    m_p.reset();
    return *this;
  }
  HeapOptional& operator=(const T& v) {
    m_p = std::make_unique<T>(v);
    return *this;
  }
  HeapOptional& operator=(T&& v) {
    m_p = std::make_unique<T>(std::move(v));
    return *this;
  }

  bool has_value() const { return m_p != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *m_p; }
  const T& operator*() const { return *m_p; }
  T* operator->() { return m_p.get(); }
  const T* operator->() const { return m_p.get(); }
  void reset() { m_p.reset(); }
  // For a collection that is usually empty: the value, made (empty) when there is none...
  T& ensure() {
    if (!m_p) m_p = std::make_unique<T>();
    return *m_p;
  }
  // ...and read as an empty one when there is none.
  const T& or_empty() const {
    static const T empty{};
    return m_p ? *m_p : empty;
  }

 private:
  std::unique_ptr<T> m_p;
};

}  // namespace abtrack::util
