#pragma once

#include <jitcache/error.hpp>

#include <cassert>
#include <optional>
#include <utility>
#include <variant>

namespace jitcache {

/// Either a value of type T or an Error (C++17 stand-in for std::expected<T, Error>).
/// Accessing value() on an error, or error() on a value, is a programming error (asserts).
template <typename T> class Expected {
public:
  Expected(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

  /// True when a value is held.
  bool has_value() const noexcept { return m_v.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(m_v); }
  const T& value() const& { assert(has_value()); return std::get<0>(m_v); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(m_v)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  /// The value moved out of a temporary (`auto x = *make();` moves, never copies).
  T&& operator*() && { return std::move(*this).value(); }

  const Error& error() const& { assert(!has_value()); return std::get<1>(m_v); }
  Error&& error() && { assert(!has_value()); return std::get<1>(std::move(m_v)); }

private:
  std::variant<T, Error> m_v;
};

/// Expected<void>: success or an Error.
template <> class Expected<void> {
public:
  Expected() = default;
  Expected(Error error) : m_error(std::move(error)) {}

  bool has_value() const noexcept { return !m_error.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  const Error& error() const& { assert(m_error); return *m_error; }
  Error&& error() && { assert(m_error); return std::move(*m_error); }

private:
  std::optional<Error> m_error;
};

} // namespace jitcache
