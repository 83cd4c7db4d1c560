#pragma once
// Rank and world size from the launcher's environment variables, without MPI. Used for the
// Loader's defaults (C++ and Python follow the same rule, see python/chute/distributed.py).
//
// Precedence (the first complete pair wins):
//   1. torchrun / torch.distributed: RANK, WORLD_SIZE (local rank: LOCAL_RANK)
//   2. Open MPI's mpirun:            OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//                                    (local rank: OMPI_COMM_WORLD_LOCAL_RANK)
//   3. PMI (MPICH, Intel MPI, srun --mpi=pmi2): PMI_RANK, PMI_SIZE (local rank: MPI_LOCALRANKID)
//   4. Slurm's srun:                 SLURM_PROCID, SLURM_NTASKS (local rank: SLURM_LOCALID)
//   5. otherwise rank 0 of 1.
// torchrun comes first because it may run inside an MPI or Slurm job whose variables describe
// the outer launch; MPI comes before Slurm because `mpirun` inside an `sbatch` script inherits
// the batch step's SLURM_PROCID=0 on every rank, while the OMPI_/PMI_ variables are per rank.
// A variable that is set must be a complete pair of integers with 0 <= rank < size; otherwise
// detection fails with kInvalidArgument naming the variables rather than silently using 0/1.

#include <functional>
#include <optional>
#include <string>

namespace chute::dist {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;              // rank within the node (for choosing a GPU); 0 when unknown
  std::string source = "default";  // e.g. "torchrun (RANK/WORLD_SIZE)", for messages and reports
};

/// Returns the value of an environment variable, or nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// Reads the process environment (std::getenv).
RankInfo detect_rank_from_env();
/// Same rule over any lookup (tests pass a map).
RankInfo detect_rank_from_env(const EnvLookup& lookup);

/// Checks 0 <= rank < world_size (world_size >= 1); kInvalidArgument otherwise. `what` names the
/// origin of the values in the message (e.g. "Loader options rank/world_size").
void validate_rank(int rank, int world_size, const std::string& what);

}  // namespace chute::dist
