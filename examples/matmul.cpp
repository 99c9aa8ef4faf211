#include "examples/matmul.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

namespace jitcache::examples {

Expected<std::string> matmul_source(const std::string& kernels_dir, const std::string& file) {
  const std::string path = kernels_dir + "/" + file;
  std::ifstream in(path);
  if (!in)
    return Error(ErrorCode::io_error, "cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

tuning::Problem matmul_problem(int m, int n, int k) {
  return {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
}

std::optional<MatmulSize> matmul_size(const tuning::Problem& problem) {
  int value[3] = {0, 0, 0};
  const char* names[3] = {"M", "N", "K"};
  for (int i = 0; i < 3; ++i) {
    const auto found = problem.find(names[i]);
    if (found == problem.end())
      return std::nullopt;
    const std::string& text = found->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value[i]);
    if (ec != std::errc() || end != text.data() + text.size() || value[i] <= 0)
      return std::nullopt;
  }
  return MatmulSize{value[0], value[1], value[2]};
}

std::vector<tuning::Parameters> matmul_candidates(const std::vector<int>& tiles, int max_items) {
  std::vector<tuning::Parameters> out;
  for (int tile : tiles)
    for (int wpt : {1, 2, 4, 8})
      if (wpt <= tile && tile % wpt == 0 && (tile / wpt) * tile <= max_items)
        out.push_back({{"TILE", std::to_string(tile)}, {"WPT", std::to_string(wpt)}});
  return out;
}

MatmulInputs matmul_inputs(int m, int n, int k) {
  MatmulInputs out{std::vector<float>(std::size_t(m) * k), std::vector<float>(std::size_t(k) * n)};
  std::uint32_t seed = 12345;
  const auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) - 0.5f;
  };
  for (float& x : out.a)
    x = next();
  for (float& x : out.b)
    x = next();
  return out;
}

bool matmul_close(std::string_view reference, std::string_view output) {
  if (reference.size() != output.size())
    return false;
  const std::size_t n = reference.size() / sizeof(float);
  for (std::size_t i = 0; i < n; ++i) {
    float r, o;
    std::memcpy(&r, reference.data() + i * sizeof(float), sizeof r);
    std::memcpy(&o, output.data() + i * sizeof(float), sizeof o);
    if (!(std::fabs(r - o) <= 1e-4f * std::max(1.0f, std::fabs(r))))
      return false;
  }
  return true;
}

tuning::Trials MatmulTrials::trials(std::vector<tuning::Parameters> candidates) {
  tuning::Trials trials;
  trials.candidates = std::move(candidates);
  trials.prepare = [this](const tuning::Parameters& p, const std::string& defines) {
    return prepare(p, defines);
  };
  trials.check = matmul_close;
  return trials;
}

Expected<std::vector<float>> MatmulTrials::compute(const tuning::Parameters& parameters) {
  auto trial = prepare(parameters, tuning::defines(m_family, parameters));
  if (!trial)
    return std::move(trial).error();
  if (auto ran = trial->run(); !ran)
    return std::move(ran).error();
  const std::string bytes = trial->output();
  std::vector<float> c(bytes.size() / sizeof(float));
  std::memcpy(c.data(), bytes.data(), bytes.size());
  return c;
}

} // namespace jitcache::examples
