#include <jitcache/expected.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace jitcache {
namespace {

const Error k_error{ErrorCode::corrupt, "checksum mismatch"};

// The message a misuse throws, or "" when nothing is thrown.
template <typename F> std::string misuse_message(F&& misuse) {
  try {
    misuse();
  } catch (const BadExpectedAccess& e) {
    return e.what();
  }
  return "";
}

TEST(ExpectedTest, HoldsAValueOrAnError) {
  Expected<std::string> value(std::string("bytes"));
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, "bytes");
  EXPECT_EQ(value->size(), 5u);
  EXPECT_EQ(std::move(value).value(), "bytes");

  Expected<std::string> error(k_error);
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().code, ErrorCode::corrupt);
  EXPECT_EQ(error.error().message, "checksum mismatch");
}

TEST(ExpectedTest, ValueOfAnErrorThrowsWithTheErrorsMessage) {
  Expected<int> error(k_error);
  const std::string what = misuse_message([&] { (void)error.value(); });
  EXPECT_NE(what.find("value() of an Expected holding an error"), std::string::npos) << what;
  EXPECT_NE(what.find("corrupt: checksum mismatch"), std::string::npos) << what;
  EXPECT_EQ(misuse_message([&] { (void)*error; }), what);
  EXPECT_EQ(misuse_message([&] { (void)*std::as_const(error); }), what);
  EXPECT_EQ(misuse_message([&] { (void)*Expected<int>(k_error); }), what);
  EXPECT_EQ(misuse_message([&] { (void)Expected<int>(k_error).value(); }), what);

  Expected<std::string> text(k_error);
  EXPECT_EQ(misuse_message([&] { (void)text->size(); }), what);
  EXPECT_EQ(misuse_message([&] { (void)std::as_const(text)->size(); }), what);
}

TEST(ExpectedTest, ErrorOfAValueThrows) {
  Expected<int> value(7);
  const std::string what = misuse_message([&] { (void)value.error(); });
  EXPECT_NE(what.find("error() of an Expected holding a value"), std::string::npos) << what;
  EXPECT_EQ(misuse_message([&] { (void)Expected<int>(7).error(); }), what);

  const Expected<void> success;
  EXPECT_EQ(misuse_message([&] { (void)success.error(); }), what);
  EXPECT_EQ(misuse_message([&] { (void)Expected<void>().error(); }), what);
}

TEST(ExpectedTest, VoidHoldsSuccessOrAnError) {
  EXPECT_TRUE(Expected<void>().has_value());
  Expected<void> failure(k_error);
  ASSERT_FALSE(failure);
  EXPECT_EQ(failure.error().message, "checksum mismatch");
  EXPECT_EQ(std::move(failure).error().code, ErrorCode::corrupt);
}

TEST(ExpectedTest, MisuseIsALogicError) {
  // Callers that catch std::logic_error (or std::exception) see it too.
  EXPECT_THROW((void)Expected<int>(k_error).value(), std::logic_error);
}

} // namespace
} // namespace jitcache
