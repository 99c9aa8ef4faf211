#include "core/includes.hpp"

#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace jitcache {

namespace {

namespace fs = std::filesystem;

struct Directive {
  std::string name;
  bool quoted; // "x" (true) or <x> (false)
};

// Finds `#include "x"` / `#include <x>` lines. Comments on the directive line are ignored;
// block comments spanning lines are not tracked (a commented-out include only adds key bytes).
std::vector<Directive> directives(std::string_view text) {
  std::vector<Directive> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#')
      continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || line.compare(i, 7, "include") != 0)
      continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string_view::npos || (line[i] != '"' && line[i] != '<'))
      continue;
    const char close = line[i] == '"' ? '"' : '>';
    const std::size_t j = line.find(close, i + 1);
    if (j == std::string_view::npos || j == i + 1)
      continue;
    out.push_back({std::string(line.substr(i + 1, j - i - 1)), close == '"'});
  }
  return out;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

class Scanner {
public:
  Scanner(const std::vector<fs::path>& dirs, const std::map<std::string, std::string>& in_memory)
      : m_dirs(dirs), m_in_memory(in_memory) {}

  void scan(std::string_view text, const std::optional<fs::path>& current_dir, int depth) {
    if (depth > 200) // include cycles without guards; the compiler reports those
      return;
    for (const Directive& d : directives(text)) {
      if (auto it = m_in_memory.find(d.name); it != m_in_memory.end()) {
        if (m_seen.insert("mem:" + d.name).second) {
          m_out.push_back({d.name, it->second});
          scan(it->second, std::nullopt, depth + 1);
        }
        continue;
      }
      std::vector<fs::path> candidates;
      if (d.quoted && current_dir)
        candidates.push_back(*current_dir / d.name);
      for (const fs::path& dir : m_dirs)
        candidates.push_back(dir / d.name);
      for (const fs::path& candidate : candidates) {
        auto content = read_file(candidate);
        if (!content)
          continue;
        const fs::path resolved = fs::weakly_canonical(candidate);
        if (m_seen.insert(resolved.string()).second) {
          m_out.push_back({resolved.string(), *content});
          scan(*content, resolved.parent_path(), depth + 1);
        }
        break;
      }
    }
  }

  std::vector<IncludedHeader> take() { return std::move(m_out); }

private:
  const std::vector<fs::path>& m_dirs;
  const std::map<std::string, std::string>& m_in_memory;
  std::set<std::string> m_seen;
  std::vector<IncludedHeader> m_out;
};

// Splits an option string like a shell would for the simple cases compilers see:
// whitespace separates, single and double quotes group.
std::vector<std::string> tokenize(std::string_view options) {
  std::vector<std::string> out;
  std::string current;
  bool in_token = false;
  char quote = 0;
  for (char c : options) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        current += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_token = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_token)
        out.push_back(std::move(current));
      current.clear();
      in_token = false;
    } else {
      current += c;
      in_token = true;
    }
  }
  if (in_token)
    out.push_back(std::move(current));
  return out;
}

} // namespace

std::vector<IncludedHeader> scan_includes(std::string_view source,
                                          const std::vector<fs::path>& include_dirs,
                                          const std::map<std::string, std::string>& in_memory) {
  Scanner scanner(include_dirs, in_memory);
  scanner.scan(source, fs::current_path(), 0);
  return scanner.take();
}

std::vector<fs::path> include_dirs_from_options(std::string_view options) {
  std::vector<fs::path> dirs;
  const std::vector<std::string> tokens = tokenize(options);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "-I" && i + 1 < tokens.size())
      dirs.emplace_back(tokens[++i]);
    else if (tokens[i].size() > 2 && tokens[i].compare(0, 2, "-I") == 0)
      dirs.emplace_back(tokens[i].substr(2));
  }
  dirs.push_back(fs::current_path());
  return dirs;
}

} // namespace jitcache
