#pragma once

#include "core/key/file_stamp.hpp"

#include <jitcache/config.hpp>
#include <jitcache/key.hpp>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace jitcache::detail {

/// What a compiler reads besides the source: the inputs every backend describes the same way.
struct SourceInputs {
  std::string_view source;
  std::string_view options;                        ///< as given to the compiler
  std::map<std::string, std::string> in_memory;    ///< headers given by name (NVRTC, hipRTC)
  std::vector<std::filesystem::path> default_dirs; ///< the runtime's own include path
  /// The key's header set holds each header's content, as a request record needs it
  /// (Config::record set); else only its stored form, the same key with the set a process made
  /// once for the scan rather than some megabytes of headers copied into every key.
  bool contents = false;
};

/// The files a key was built from: what must stay as it was for the key to stay right.
struct Dependencies {
  std::vector<detail::FileStamp> read; ///< every file read, stamped as read
  std::vector<std::string> absent;     ///< include candidates that were not there (IncludeScan)
  std::vector<std::string> listed;     ///< directories whose listing was used
  /// The guards of a scan the process remembered (add_source_fields), found holding when it was
  /// taken again: what guards_of() returns, without a stat, unless `newest` (the latest times
  /// among their stamps) is too recent by its clock. Null for a scan made now.
  struct Vouched {
    std::string guards;
    detail::FileStamp newest;
  };
  std::shared_ptr<const Vouched> vouched;
  /// The lists of a scan the process remembered (add_source_fields), shared by every key built
  /// from it rather than copied into each (a CuPy kernel's thousand stamps and absent paths: most
  /// of what a miss's key still cost): `read`, `absent`, `listed` and `vouched` are then empty.
  /// Read them through files().
  std::shared_ptr<const Dependencies> scan;

  /// The lists and their vouching guards: `scan`'s where it is set, else these.
  const Dependencies& files() const { return scan ? *scan : *this; }
};

/// The largest candidate of an `#include MACRO` read for the key (see add_source_fields), and the
/// largest file a portable manifest hashes: 16 MiB, about 80 times CUB's largest header.
constexpr std::uint64_t k_largest_candidate = std::uint64_t(16) << 20;

/// The stamps that vouch for a key built from `deps`, to check later without reading a file:
/// each file read; each listed directory; for each absent path, the nearest directory above it
/// that exists (creating the path adds an entry there, which changes that directory's stamp).
/// Returned in their stored form (encode_stamps); nullopt when one of them changed too recently,
/// by `clock`, to vouch for anything (see too_recent). `deps.files().vouched`, when set, answers.
std::optional<std::string> guards_of(const Dependencies& deps, detail::StampClock clock);

/// Adds to `builder` the options, the source, and every header the source pulls in, so that the
/// key changes exactly when what the compiler reads changes:
/// - options keep their order and text, except that each `-I DIR` is written as `-I<include
///   dir N>` and each `-D NAME=VALUE` whose VALUE names an existing file as `-DNAME=<file>`:
///   directories and files count by what they contain, not by how they are spelled (a checkout
///   moved elsewhere keeps its keys);
/// - headers are found through `#include` as the compiler would (quoted: the including file's
///   directory first; then the -I directories, `default_dirs`, the current directory) and keyed
///   by their spelling and content, their resolved path kept for `jitcache explain`; a header
///   that disappears, or that another directory now provides first, changes the key;
/// - an `#include MACRO` (target unknown without preprocessing) and a -D file add the content of
///   every file that could be meant: all regular files directly in the include directories and
///   in the folder of the file holding the include (the source's: the current directory; a
///   header's: its own, never the current directory), each up to k_largest_candidate bytes; a
///   larger one (a data file where the program runs: no compiler includes such a header) adds
///   its name, size and modification time instead, and is not read.
/// Returns the files it read and looked for.
Dependencies add_source_fields(KeyBuilder& builder, const SourceInputs& inputs);

/// An option that names an include directory, and how it is written in the key.
struct IncludeFlag {
  std::string_view flag;    ///< "-I", "--include-path=", "-isystem"
  std::string_view written; ///< "-I": flags meaning the same are written alike
};

/// Adds `options` (one option per element, as NVRTC and hipRTC take them) to `builder`, each its
/// own field so that no two lists hash alike, except include directories: an element starting
/// with one of `include_flags`, the directory joined ("-Idir") or as the next element ("-I",
/// "dir"), is written "<written><include dir N>" and the directory appended to `dirs` (for
/// add_source_fields: directories count by what they provide, not by their spelling).
void add_option_list(KeyBuilder& builder, const std::vector<std::string>& options,
                     const std::vector<IncludeFlag>& include_flags,
                     std::vector<std::filesystem::path>& dirs);

/// Adds, as toolchain fields, the environment variables `backend`'s compiler reads that change
/// the code it generates (e.g. POCL_EXTRA_BUILD_FLAGS), where they are set.
void add_compile_environment(KeyBuilder& builder, const Config& config, std::string_view backend);

} // namespace jitcache::detail
