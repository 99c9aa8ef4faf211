#pragma once

#include <jitcache/error.hpp>
#include <jitcache/export.hpp>

#include <optional>
#include <stdexcept>
#include <utility>
#include <variant>

namespace jitcache {

/// Thrown by Expected on misuse: value(), operator* or operator-> on an Expected holding an
/// error, or error() on one holding a value. A programming error in the caller, never a cache
/// failure (those are the Error side of an Expected). The same in every build type.
/// what() names the access and, when the Expected held an error, that error's code and message.
class JITCACHE_EXPORT BadExpectedAccess : public std::logic_error {
public:
  /// `access` names what was misused (e.g. "value() of an Expected holding an error"); `held` is
  /// the error the Expected held, or null when it held a value. Nothing is kept past the call.
  BadExpectedAccess(const char* access, const Error* held);
  ~BadExpectedAccess() override;
};

/// Either a value of type T or an Error (C++17 stand-in for std::expected<T, Error>).
/// [[nodiscard]]: a result that is dropped is a failure nobody looks at; discard one explicitly
/// (`(void)`), saying why ignoring it is right. value(), operator* and operator-> on an error,
/// and error() on a value, throw BadExpectedAccess (in every build type). Not thread-safe beyond
/// what T is: one Expected is not shared between threads while being modified.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}

  /// True when a value is held.
  bool has_value() const noexcept { return m_v.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  /// The value. Throws BadExpectedAccess when an error is held (what() includes its message).
  T& value() & { return *checked_value(); }
  const T& value() const& { return *checked_value(); }
  T&& value() && { return std::move(*checked_value()); }
  /// Like value(): throws BadExpectedAccess when an error is held.
  T* operator->() { return checked_value(); }
  const T* operator->() const { return checked_value(); }
  T& operator*() & { return *checked_value(); }
  const T& operator*() const& { return *checked_value(); }
  /// The value moved out of a temporary (`auto x = *make();` moves, never copies).
  T&& operator*() && { return std::move(*checked_value()); }

  /// The error. Throws BadExpectedAccess when a value is held.
  const Error& error() const& { return *checked_error(); }
  Error&& error() && { return std::move(*checked_error()); }

private:
  T* checked_value() { return const_cast<T*>(static_cast<const Expected&>(*this).checked_value()); }
  const T* checked_value() const {
    if (const T* v = std::get_if<0>(&m_v))
      return v;
    throw BadExpectedAccess("value() of an Expected holding an error", std::get_if<1>(&m_v));
  }
  Error* checked_error() {
    return const_cast<Error*>(static_cast<const Expected&>(*this).checked_error());
  }
  const Error* checked_error() const {
    if (const Error* e = std::get_if<1>(&m_v))
      return e;
    throw BadExpectedAccess("error() of an Expected holding a value", nullptr);
  }

  std::variant<T, Error> m_v;
};

/// Expected<void>: success or an Error. [[nodiscard]] as Expected<T>; error() on a success
/// throws BadExpectedAccess (in every build type).
template <> class [[nodiscard]] Expected<void> {
public:
  Expected() = default;
  Expected(Error error) : m_error(std::move(error)) {}

  /// True on success.
  bool has_value() const noexcept { return !m_error.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  /// The error. Throws BadExpectedAccess on a success.
  const Error& error() const& { return *checked_error(); }
  Error&& error() && { return std::move(*checked_error()); }

private:
  Error* checked_error() {
    return const_cast<Error*>(static_cast<const Expected&>(*this).checked_error());
  }
  const Error* checked_error() const {
    if (!m_error)
      throw BadExpectedAccess("error() of an Expected holding a value", nullptr);
    return &*m_error;
  }

  std::optional<Error> m_error;
};

} // namespace jitcache
