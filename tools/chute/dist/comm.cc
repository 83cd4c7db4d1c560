#include "chute/dist/comm.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chute/util/error.h"

namespace chute::dist {
namespace {

std::atomic<CommFactory>& mpi_factory() {
  static std::atomic<CommFactory> factory{nullptr};
  return factory;
}

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

std::unique_ptr<Comm> LocalComm::first_ranks(int n) {
  if (n != 1)
    fail(ErrorCode::kInvalidArgument, "first_ranks({}): expected 1 for a single process", n);
  return std::make_unique<LocalComm>();
}

void LocalComm::abort_all(int code, std::string_view message) {
  std::fprintf(stderr, "chute: rank 0/1: %.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::exit(code);
}

bool launched_by_mpi() {
  return env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMI_SIZE") || env_set("PMIX_RANK");
}

bool register_mpi_comm_factory(CommFactory factory) {
  mpi_factory().store(factory);
  return true;
}

bool mpi_backend_available() { return mpi_factory().load() != nullptr; }

std::unique_ptr<Comm> make_comm() {
  // The MPI factory itself returns nullptr when neither a launcher nor an initialised MPI is
  // present, so a plain `./program` never initialises MPI (which can be slow or print warnings).
  if (CommFactory factory = mpi_factory().load()) {
    if (std::unique_ptr<Comm> comm = factory()) return comm;
  }
  return std::make_unique<LocalComm>();
}

}  // namespace chute::dist
