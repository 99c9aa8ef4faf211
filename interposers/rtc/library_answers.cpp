#include "interposers/rtc/library_answers.hpp"

#include "core/support/byte_io.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace jitcache::rtc {

namespace {

constexpr std::string_view k_answers_magic = "jitcache-rtc-answers";
constexpr std::uint32_t k_answers_format = 1; // you MUST bump it when LibraryAnswers changes

// The stored form of `answers` (the record's payload), and back; nullopt on bytes that are not a
// whole one.
std::string encode_answers(const LibraryAnswers& answers) {
  std::string out(k_answers_magic);
  detail::append_le<std::uint32_t>(out, k_answers_format);
  detail::append_le<std::int32_t>(out, answers.major);
  detail::append_le<std::int32_t>(out, answers.minor);
  detail::append_le<std::uint32_t>(out, static_cast<std::uint32_t>(answers.targets.size()));
  for (const std::int32_t target : answers.targets)
    detail::append_le(out, target);
  return out;
}

std::optional<LibraryAnswers> decode_answers(std::string_view in) {
  if (in.substr(0, k_answers_magic.size()) != k_answers_magic)
    return std::nullopt;
  in.remove_prefix(k_answers_magic.size());
  std::uint32_t format = 0, count = 0;
  LibraryAnswers answers;
  if (!detail::take_le(in, format) || format != k_answers_format ||
      !detail::take_le<std::int32_t>(in, answers.major) ||
      !detail::take_le<std::int32_t>(in, answers.minor) || !detail::take_le(in, count) ||
      count > in.size() / 4)
    return std::nullopt;
  answers.targets.resize(count);
  for (int& target : answers.targets)
    detail::take_le<std::int32_t>(in, target); // the size was checked above
  if (!in.empty())
    return std::nullopt;
  return answers;
}

} // namespace

Expected<LibraryAnswers> library_answers(Cache& cache, const std::string& backend,
                                         const AnswersSource& source) {
  bool remembered = false;
  return detail::remembered_identity<LibraryAnswers>(detail::core_of(cache), backend, source.search,
                                                     encode_answers, decode_answers, source.ask,
                                                     &remembered);
}

} // namespace jitcache::rtc
