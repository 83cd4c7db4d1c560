#pragma once
// The MPI backend of Comm (only in the chute_mpi library; CHUTE_HAVE_MPI=1 for its users).
// Works whether or not someone else (mpi4py, the user's program) initialised MPI first: it
// initialises MPI with MPI_THREAD_FUNNELED only when nobody has, and finalises it only if it did,
// when the last MpiComm is destroyed. Collectives run on a private duplicate of the world
// communicator, so they never match messages of the user's own MPI code.

// Only the C API: chute links MPI::MPI_C, not the deprecated C++ bindings that mpi.h would pull in.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <memory>

#include "chute/dist/comm.h"

namespace chute::dist {

class MpiComm final : public Comm {
 public:
  /// A communicator over all ranks (a duplicate of MPI_COMM_WORLD); initialises MPI if needed.
  /// Throws kUnsupported if MPI was already finalised.
  MpiComm();
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "mpi"; }
  void barrier() override;
  int64_t allreduce_i64(int64_t value, ReduceOp op) override;
  double allreduce_f64(double value, ReduceOp op) override;
  std::vector<int64_t> allgather_i64(int64_t value) override;
  std::vector<double> allgather_f64(double value) override;
  std::string broadcast_from_root(std::string bytes) override;
  std::vector<std::string> gather_to_root(std::string_view bytes) override;
  std::unique_ptr<Comm> first_ranks(int n) override;
  [[noreturn]] void abort_all(int code, std::string_view message) override;

  MPI_Comm handle() const { return comm_; }

 private:
  struct Adopt {};
  MpiComm(Adopt, MPI_Comm comm);  // takes ownership of `comm` (from MPI_Comm_split)

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace chute::dist
