#include "chute/dist/env.h"

#include <charconv>
#include <cstdlib>
#include <limits>

#include "chute/util/error.h"

namespace chute::dist {
namespace {

struct Launcher {
  const char* name;
  const char* rank_var;
  const char* size_var;
  const char* local_rank_var;
};

constexpr Launcher kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

int parse_int(const std::string& text, const char* variable) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) {
    fail(ErrorCode::kInvalidArgument, "environment variable {}=\"{}\": expected an integer",
         variable, text);
  }
  return value;
}

}  // namespace

void validate_rank(int rank, int world_size, const std::string& what) {
  if (world_size < 1) {
    fail(ErrorCode::kInvalidArgument, "{}: expected a world size >= 1, got {}", what, world_size);
  }
  if (rank < 0 || rank >= world_size) {
    fail(ErrorCode::kInvalidArgument, "{}: expected 0 <= rank < world size {}, got rank {}", what,
         world_size, rank);
  }
}

RankInfo detect_rank_from_env(const EnvLookup& lookup) {
  for (const Launcher& launcher : kLaunchers) {
    std::optional<std::string> rank_text = lookup(launcher.rank_var);
    std::optional<std::string> size_text = lookup(launcher.size_var);
    if (!rank_text && !size_text) continue;
    if (!rank_text || !size_text) {
      fail(ErrorCode::kInvalidArgument,
           "environment: {} is set but {} is not; expected both (from {}) or neither",
           rank_text ? launcher.rank_var : launcher.size_var,
           rank_text ? launcher.size_var : launcher.rank_var, launcher.name);
    }
    RankInfo info;
    info.rank = parse_int(*rank_text, launcher.rank_var);
    info.world_size = parse_int(*size_text, launcher.size_var);
    info.source = fmt::format("{} ({}/{})", launcher.name, launcher.rank_var, launcher.size_var);
    validate_rank(info.rank, info.world_size,
                  fmt::format("environment {}={} {}={}", launcher.rank_var, info.rank,
                              launcher.size_var, info.world_size));
    if (std::optional<std::string> local = lookup(launcher.local_rank_var)) {
      info.local_rank = parse_int(*local, launcher.local_rank_var);
      if (info.local_rank < 0 || info.local_rank >= info.world_size) {
        fail(ErrorCode::kInvalidArgument, "environment {}={}: expected 0 <= local rank < {} ({})",
             launcher.local_rank_var, info.local_rank, info.world_size, launcher.size_var);
      }
    }
    return info;
  }
  return RankInfo{};
}

RankInfo detect_rank_from_env() {
  return detect_rank_from_env([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  });
}

}  // namespace chute::dist
