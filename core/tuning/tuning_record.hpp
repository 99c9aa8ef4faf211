#pragma once

#include "core/tiers/packages/package_target.hpp"

#include <jitcache/entry.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/tuning.hpp>

#include <string>
#include <string_view>

namespace jitcache::tuning {

/// The backend name a tuning record is stored under in its entry (and counted under in Stats).
inline constexpr const char* k_tuning_backend = "tuning";

/// Version of a record's body (below). You MUST bump it when the body's layout changes.
inline constexpr std::uint32_t k_record_version = 1;

/// What identifies a record: the bytes its digest is taken of (record_key() is their SHA-256).
/// Length-delimited fields (byte_io): a schema tag, the family's name and version, the
/// problem's pairs, the device's backend and identity pairs.
std::string identity_fields(const Family& family, const Problem& problem, const Device& device);

/// The stored form of `record`: an entry (core/tiers/entry_codec: magic, entry format version, XXH3
/// checksum, the digest it is stored under) of backend "tuning" whose key fields are
/// identity_fields() and whose payload is the body: u32le k_record_version, then the device's
/// name, the parameters, best and default times (u64le ns), method (u8), when (i64le), the
/// jitcache version, candidates and skipped (u32le). Self-describing: a package can carry it as
/// any other entry, and decode_record() needs nothing but the bytes and the digest.
std::string encode_record(const Record& record);

/// `record` as it reads back once stored: its times in whole nanoseconds. What tune() answers
/// is this, so that it equals what a later lookup() finds.
Record as_stored(Record record);

/// The device's part of identity_fields(): its backend and identity pairs, length-delimited.
std::string device_fields(const Device& device);

/// What a package of tuning records for `record`'s device serves: backend "tuning", the label
/// "<backend>-<device name>" (file names: "tuning-opencl-cpu.jcpkg"), the identity
/// device_fields(). A package of records serves one device, as a package of kernels one target.
detail::PackageTarget package_target(const Record& record);

/// The digest `record` is stored under (record_key() of its family, problem and device).
Digest key_of(const Record& record);

/// Parses and verifies bytes stored under `key`: the entry's checks (magic, format version,
/// checksum, digest), then that its key fields hash to `key` (or, when the caller knows them,
/// equal `fields`: identity_fields() of what `key` was made of, saving a hash), then the body.
/// Errors (code corrupt) say what failed.
Expected<Record> decode_record(const Digest& key, std::string_view bytes,
                               std::string_view fields = {});
/// The same for an entry already verified (view_entry: a package's entry as a PackageStore hands
/// it over): the checks after the entry's own.
Expected<Record> decode_record(const Digest& key, const EntryView& entry,
                               std::string_view fields = {});

} // namespace jitcache::tuning
