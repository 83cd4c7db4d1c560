#include "chute/dist/mpi_comm.h"

#include <cstdio>
#include <mutex>
#include <string>

#include "chute/util/error.h"

namespace chute::dist {
namespace {

// Process-wide MPI lifetime: MPI can be initialised once per process, so MpiComm instances share
// one reference count and the last one finalises MPI if chute initialised it.
std::mutex g_lifetime_mutex;
int g_live_comms = 0;
bool g_we_initialised = false;

void check(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  fail(ErrorCode::kIoError, "{} failed: {}", call, std::string(text, length));
}

void acquire_mpi() {
  std::lock_guard lock(g_lifetime_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) fail(ErrorCode::kUnsupported, "MPI was already finalised in this process");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    g_we_initialised = true;
  }
  ++g_live_comms;
}

void release_mpi() {
  std::lock_guard lock(g_lifetime_mutex);
  if (--g_live_comms > 0 || !g_we_initialised) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  g_we_initialised = false;
}

MPI_Op to_mpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

int checked_count(size_t bytes) {
  if (bytes > static_cast<size_t>(INT32_MAX)) {
    fail(ErrorCode::kInvalidArgument, "expected a message of at most 2 GiB, got {} bytes", bytes);
  }
  return static_cast<int>(bytes);
}

std::unique_ptr<Comm> make_mpi_comm_if_launched() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && !launched_by_mpi()) return nullptr;
  return std::make_unique<MpiComm>();
}

}  // namespace

// Referenced from comm.h in every file of a program that links chute_mpi, which pulls this object
// file (and so this registration) out of the static library.
const bool kMpiCommRegistered = register_mpi_comm_factory(&make_mpi_comm_if_launched);

MpiComm::MpiComm() {
  acquire_mpi();
  try {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  } catch (...) {
    release_mpi();
    throw;
  }
}

MpiComm::MpiComm(Adopt, MPI_Comm comm) : comm_(comm) {
  acquire_mpi();
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  release_mpi();
}

void MpiComm::barrier() { check(MPI_Barrier(comm_), "MPI_Barrier"); }

int64_t MpiComm::allreduce_i64(int64_t value, ReduceOp op) {
  int64_t result = 0;
  check(MPI_Allreduce(&value, &result, 1, MPI_INT64_T, to_mpi(op), comm_), "MPI_Allreduce");
  return result;
}

double MpiComm::allreduce_f64(double value, ReduceOp op) {
  double result = 0;
  check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, to_mpi(op), comm_), "MPI_Allreduce");
  return result;
}

std::vector<int64_t> MpiComm::allgather_i64(int64_t value) {
  std::vector<int64_t> values(size_);
  check(MPI_Allgather(&value, 1, MPI_INT64_T, values.data(), 1, MPI_INT64_T, comm_),
        "MPI_Allgather");
  return values;
}

std::vector<double> MpiComm::allgather_f64(double value) {
  std::vector<double> values(size_);
  check(MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, comm_), "MPI_Allgather");
  return values;
}

std::string MpiComm::broadcast_from_root(std::string bytes) {
  int64_t length = rank_ == 0 ? static_cast<int64_t>(bytes.size()) : 0;
  check(MPI_Bcast(&length, 1, MPI_INT64_T, 0, comm_), "MPI_Bcast");
  bytes.resize(static_cast<size_t>(length));
  check(MPI_Bcast(bytes.data(), checked_count(bytes.size()), MPI_BYTE, 0, comm_), "MPI_Bcast");
  return bytes;
}

std::vector<std::string> MpiComm::gather_to_root(std::string_view bytes) {
  int length = checked_count(bytes.size());
  std::vector<int> lengths(rank_ == 0 ? size_ : 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_), "MPI_Gather");
  std::vector<int> offsets(lengths.size());
  size_t total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = checked_count(total);
    total += static_cast<size_t>(lengths[r]);
  }
  checked_count(total);
  std::string all(total, '\0');
  check(MPI_Gatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(),
                    MPI_BYTE, 0, comm_),
        "MPI_Gatherv");
  std::vector<std::string> result;
  result.reserve(lengths.size());
  for (size_t r = 0; r < lengths.size(); ++r) result.push_back(all.substr(offsets[r], lengths[r]));
  return result;
}

std::unique_ptr<Comm> MpiComm::first_ranks(int n) {
  if (n < 1 || n > size_) {
    fail(ErrorCode::kInvalidArgument, "first_ranks({}): expected 1 <= n <= {} (the rank count)", n,
         size_);
  }
  const bool member = rank_ < n;
  MPI_Comm sub = MPI_COMM_NULL;
  check(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &sub), "MPI_Comm_split");
  if (!member) return nullptr;
  return std::unique_ptr<Comm>(new MpiComm(Adopt{}, sub));
}

void MpiComm::abort_all(int code, std::string_view message) {
  std::fprintf(stderr, "chute: rank %d/%d: %.*s\n", rank_, size_, static_cast<int>(message.size()),
               message.data());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort should not return
}

}  // namespace chute::dist
