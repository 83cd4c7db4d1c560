#pragma once
// A small communicator: the handful of collectives chute needs across ranks (barrier, reductions
// of one number, gathers of one number or a byte string, a broadcast from rank 0, a collective
// abort). Two backends: LocalComm (one process) and MpiComm (dist/mpi_comm.h, only in programs
// linking chute_mpi). The core never includes MPI headers; ranks and world sizes are plain ints.
//
// Threading rule: a Comm is used only from the thread that created it (the main thread). Loader
// worker threads never talk to other ranks: every rank derives its share of each batch from
// (seed, epoch, rank, world size) alone, so no collective is needed while loading.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chute::dist {

enum class ReduceOp { kSum, kMax, kMin };

class Comm {
 public:
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "local" or "mpi", for reports.
  virtual std::string_view backend() const = 0;

  /// Every collective below must be called by every rank of the communicator, in the same order.
  virtual void barrier() = 0;
  virtual int64_t allreduce_i64(int64_t value, ReduceOp op) = 0;
  virtual double allreduce_f64(double value, ReduceOp op) = 0;
  /// Element r of the result is rank r's value, on every rank.
  virtual std::vector<int64_t> allgather_i64(int64_t value) = 0;
  virtual std::vector<double> allgather_f64(double value) = 0;
  /// Rank 0's `bytes` on every rank (other ranks' arguments are ignored).
  virtual std::string broadcast_from_root(std::string bytes) = 0;
  /// On rank 0: every rank's bytes, element r from rank r. On other ranks: an empty vector.
  virtual std::vector<std::string> gather_to_root(std::string_view bytes) = 0;
  /// A communicator of ranks [0, n) of this one (same rank numbers) for those ranks, nullptr for
  /// the others. Collective over this communicator. Precondition: 1 <= n <= size().
  virtual std::unique_ptr<Comm> first_ranks(int n) = 0;

  /// Prints "chute: rank R/N: message" to stderr and ends every rank's process with `code`.
  /// Not collective: any one rank may call it (e.g. after an error only it saw).
  [[noreturn]] virtual void abort_all(int code, std::string_view message) = 0;
};

/// A single-process communicator: rank 0 of 1; every collective returns its own input.
class LocalComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string_view backend() const override { return "local"; }
  void barrier() override {}
  int64_t allreduce_i64(int64_t value, ReduceOp) override { return value; }
  double allreduce_f64(double value, ReduceOp) override { return value; }
  std::vector<int64_t> allgather_i64(int64_t value) override { return {value}; }
  std::vector<double> allgather_f64(double value) override { return {value}; }
  std::string broadcast_from_root(std::string bytes) override { return bytes; }
  std::vector<std::string> gather_to_root(std::string_view bytes) override {
    return {std::string(bytes)};
  }
  std::unique_ptr<Comm> first_ranks(int n) override;
  [[noreturn]] void abort_all(int code, std::string_view message) override;
};

/// The communicator for this process: an MpiComm when the program links chute_mpi (built with
/// MPI) AND was started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set) or
/// MPI is already initialised (e.g. by mpi4py); a LocalComm otherwise. Call it from the main
/// thread. An MpiComm initialises MPI if nobody has (MPI_THREAD_FUNNELED) and finalises it when
/// the last MpiComm is destroyed, only if it was the one that initialised it.
std::unique_ptr<Comm> make_comm();

/// True when the environment shows an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK).
bool launched_by_mpi();

/// How make_comm() finds the MPI backend without the core depending on MPI: mpi_comm.cc registers
/// a factory from a static initialiser. A static library member is only linked when something
/// references it, so when this header is compiled with CHUTE_HAVE_MPI (a public definition of the
/// chute_mpi target) every including file references kMpiCommRegistered, which pulls
/// mpi_comm.o — and with it the registration — into the program. Programs without chute_mpi
/// never see the reference and get LocalComm.
using CommFactory = std::unique_ptr<Comm> (*)();
/// Installs the MPI factory; returns true. Called once by mpi_comm.cc.
bool register_mpi_comm_factory(CommFactory factory);
/// True when an MPI factory was registered (this program was linked with chute_mpi).
bool mpi_backend_available();

#if defined(CHUTE_HAVE_MPI) && CHUTE_HAVE_MPI
extern const bool kMpiCommRegistered;
namespace internal {
[[gnu::used]] static const bool* const kPullInMpiComm = &kMpiCommRegistered;
}  // namespace internal
#endif

}  // namespace chute::dist
