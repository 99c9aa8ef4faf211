#include "core/dependencies.hpp"

#include "core/includes.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace jitcache {

namespace {

namespace fs = std::filesystem;

std::string strip_quotes(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

std::optional<std::string> file_content(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Every regular file directly in `dirs`: what an #include MACRO or a -D file could name.
void add_candidates(KeyBuilder& builder, const std::string& why,
                    const std::vector<fs::path>& dirs) {
  std::set<fs::path> seen;
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    std::set<fs::path> files; // sorted: directory order is not stable
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec))
        files.insert(it->path());
    for (const fs::path& file : files)
      if (seen.insert(fs::weakly_canonical(file, ec)).second)
        if (auto content = file_content(file))
          builder.header(why + ": " + file.filename().string(), *content, file.string());
  }
}

} // namespace

void add_source_fields(KeyBuilder& builder, const SourceInputs& in) {
  const std::vector<std::string> tokens = split_options(in.options);
  std::vector<fs::path> dirs;
  std::vector<std::pair<std::string, fs::path>> define_files;
  std::string normalized;
  const auto emit = [&](const std::string& token) {
    if (!normalized.empty())
      normalized += ' ';
    normalized += token;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t == "-I" || (t.size() > 2 && t.compare(0, 2, "-I") == 0)) {
      const std::string dir = t == "-I" ? (i + 1 < tokens.size() ? tokens[++i] : "") : t.substr(2);
      dirs.emplace_back(dir);
      emit("-I<include dir " + std::to_string(dirs.size()) + ">");
      continue;
    }
    if (t.size() > 2 && t.compare(0, 2, "-D") == 0) {
      const auto eq = t.find('=');
      if (eq != std::string::npos) {
        const std::string name = t.substr(2, eq - 2);
        const fs::path value = strip_quotes(t.substr(eq + 1));
        std::error_code ec;
        if (!value.empty() && fs::is_regular_file(value, ec)) {
          define_files.emplace_back(name, value);
          emit("-D" + name + "=<file>");
          continue;
        }
      }
    }
    emit(t);
  }
  builder.options(normalized);
  builder.source(in.source);

  // The runtime's own include directories come from the toolchain whose version is in the key:
  // they are searched, but a computed include does not pull in every file they hold.
  std::vector<fs::path> user_dirs = dirs;
  user_dirs.push_back(fs::current_path());
  for (const fs::path& d : in.default_dirs)
    dirs.push_back(d);
  dirs.push_back(fs::current_path());
  const IncludeScan scan = scan_includes(in.source, dirs, in.in_memory);
  for (const IncludedHeader& h : scan.headers)
    builder.header(h.name, h.content, h.path);
  for (const auto& [name, path] : define_files)
    builder.header("-D" + name, *file_content(path), path.string());
  if (!scan.computed.empty()) {
    std::string macros;
    for (const std::string& m : scan.computed)
      macros += (macros.empty() ? "" : ", ") + m;
    add_candidates(builder, "#include " + macros, user_dirs);
  }
}

void add_compile_environment(KeyBuilder& builder, const Config& config, std::string_view backend) {
  for (const auto& [name, value] : config.compile_environment(backend))
    builder.toolchain("env " + name, value);
}

} // namespace jitcache
