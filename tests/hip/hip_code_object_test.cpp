// Reading the target out of a code object: what decides whether a stored one is usable.
#include "tests/hip/hip_test_support.hpp"

#include "backends/hip/hip_metadata.hpp"

namespace jitcache {
namespace {

std::string compiled(const std::string& target) {
  test::FreshCache fresh;
  auto code = hip::compile(*fresh.cache, target, test::hip_kernel("saxpy.hip"));
  EXPECT_TRUE(code) << code.error().message;
  return code ? code->code : std::string();
}

// A clang offload bundle (hipcc's format) holding a host entry and `elf` for `target`.
std::string bundle(const std::string& elf, const std::string& target) {
  const std::string ids[] = {"host-x86_64-unknown-linux-gnu", "hipv4-amdgcn-amd-amdhsa--" + target};
  std::string header = "__CLANG_OFFLOAD_BUNDLE__";
  const auto u64 = [](std::string& out, std::uint64_t v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  };
  u64(header, 2);
  std::uint64_t data_at = header.size();
  for (const std::string& id : ids)
    data_at += 24 + id.size();
  u64(header, data_at); // the host entry is empty
  u64(header, 0);
  u64(header, ids[0].size());
  header += ids[0];
  u64(header, data_at);
  u64(header, elf.size());
  u64(header, ids[1].size());
  header += ids[1];
  return header + elf;
}

TEST(HipCodeObject, ReadsTheFullTargetId) {
  for (const std::string target : {"gfx90a", "gfx90a:sramecc+:xnack-", "gfx1030"}) {
    const std::string elf = compiled(target);
    auto found = hip::code_object_target(elf);
    ASSERT_TRUE(found) << found.error().message;
    EXPECT_EQ(*found, target);
    EXPECT_TRUE(hip::check_code_object(elf, target));
  }
}

TEST(HipCodeObject, ReadsTheCodeObjectInsideAnOffloadBundle) {
  const std::string elf = compiled("gfx906");
  auto found = hip::code_object_target(bundle(elf, "gfx906"));
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(*found, "gfx906");
}

TEST(HipCodeObject, RefusesAnotherTargetAndAnythingElse) {
  const std::string elf = compiled("gfx906");
  auto other = hip::check_code_object(elf, "gfx906:xnack+");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::corrupt);
  EXPECT_NE(other.error().message.find("gfx906"), std::string::npos);

  std::string not_amdgpu = elf;
  not_amdgpu[18] = 62; // EM_X86_64
  std::string no_note = elf;
  for (std::size_t at = no_note.find("amdhsa.target"); at != std::string::npos;
       at = no_note.find("amdhsa.target", at))
    no_note[at] = 'X';
  for (const std::string& bad :
       {std::string(), std::string("garbage"), elf.substr(0, 40), elf.substr(0, 100), not_amdgpu,
        no_note, std::string("__CLANG_OFFLOAD_BUNDLE__"), bundle(elf, "gfx906").substr(0, 60)}) {
    auto found = hip::code_object_target(bad);
    ASSERT_FALSE(found) << bad.size() << " bytes";
    EXPECT_EQ(found.error().code, ErrorCode::corrupt);
  }
}

} // namespace
} // namespace jitcache
