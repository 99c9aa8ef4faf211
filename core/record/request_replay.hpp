#pragma once

#include "core/key/includes.hpp"
#include "core/record/request_record.hpp"

#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>

#include <filesystem>
#include <string>

namespace jitcache::detail {

/// Whether a header field of a record names a file the source includes (and not the candidates
/// of an `#include MACRO` or a `-D` file, which the key lists under those names).
bool included_header(const RecordedHeader& header);

/// Whether a replay of `record` has the recorded key: `key` is the key the replay computed for
/// the recorded target. Errors: invalid_argument saying how the request differs from the
/// recorded one (each device or toolchain field that changed, each header missing, added or of
/// other content), or that only the options, source or variables can explain it.
Expected<void> check_replayed_key(const RequestRecord& record, const Key& key);

/// `record` as a backend's program (cuda::Program, hip::Program): name, source, options and
/// name expressions, with the headers the recording program gave in memory, and (when `found`
/// is given: the key of such a program on this machine) each included header `found` lacks or
/// has with other content, given in memory by the name the source spells (the first of two
/// with one name wins, as the include scan takes the first). So a replay reads the headers this
/// machine has as the recording one did (the toolkit's among them) and gets the others from the
/// record.
template <typename Program>
Program program_of(const RequestRecord& record, const Key* found = nullptr) {
  Program program;
  program.name = record.name;
  program.source = record.source;
  program.options = record.options;
  program.name_expressions = record.name_expressions;
  for (const RecordedHeader& header : record.headers) {
    bool given = header.path == k_in_memory_path;
    if (found && !given && included_header(header)) {
      given = true;
      for (const KeyField& field : found->fields)
        if (field.section == KeySection::header && field.name == header.name)
          given = given && field.value != header.content;
    }
    for (const auto& known : program.headers)
      given = given && known.name != header.name;
    if (given)
      program.headers.push_back({header.name, header.content});
  }
  return program;
}

/// The program that makes `record` again with its recorded key: program_of(record), and when
/// its key (`make_key(program)`, for the recorded target) is not the recorded one,
/// program_of(record, that key). `recall(program)`, when given, is tried first: the key as a hit
/// takes it (remembered_current_key: no header read when the files it was built from are
/// unchanged), so that a replay of a record warmed before reads no header; when it is not the
/// recorded key, make_key's (with its header fields) decides as above. Errors: make_key's, and
/// check_replayed_key's when neither has the recorded key.
template <typename Program, typename MakeKey, typename RecallKey>
Expected<Program> replayed_program(const RequestRecord& record, const MakeKey& make_key,
                                   const RecallKey& recall) {
  Program program = program_of<Program>(record);
  if (Expected<Key> recalled = recall(program); recalled && recalled->digest.hex() == record.key)
    return program;
  Expected<Key> key = make_key(program);
  if (key && key->digest.hex() != record.key) {
    program = program_of<Program>(record, &*key);
    key = make_key(program);
  }
  if (!key)
    return std::move(key).error();
  if (auto same = check_replayed_key(record, *key); !same)
    return std::move(same).error();
  return program;
}

/// Writes the included headers of `record` under `dir` (created) at the names the source
/// spells, so that an include path pointing there resolves them. A name that is absolute or
/// climbs out of `dir` is left out. Errors: io_error naming the file that cannot be written.
Expected<void> write_headers(const RequestRecord& record, const std::filesystem::path& dir);

/// `options` (an option string, as OpenCL takes it) with the directory of every `-I` pointing
/// to `dir`: the key keeps its options (an include directory counts by what it provides), and
/// the headers written there by write_headers() resolve.
std::string options_including(const std::string& options, const std::filesystem::path& dir);

} // namespace jitcache::detail
