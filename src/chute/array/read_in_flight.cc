// ReadPlan with reads in flight: every chunk of the plan that is read whole is located first
// (on the calling thread), its read submitted to its store while fewer than `window` are
// outstanding, and the pool's workers decode items in the order their bytes arrive. Stores
// that serve submit() asynchronously (local files on the I/O executor, object stores) keep the
// window full while the workers decode; the decode threads never wait on one read at a time.
// start_in_flight() locates and submits the first window; finish_in_flight() decodes. Between
// the two another plan may decode (the loader's read-ahead): plans sharing a Budget share the
// window, the one started first first.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "chute/array/array.h"
#include "chute/array/read_plan.h"
#include "chute/util/clock.h"

namespace chute {

struct ReadPlan::InFlight {
  ReadPlan* plan = nullptr;
  std::shared_ptr<Budget> budget;  // the window, shared with plans started alongside
  std::mutex mutex;
  std::condition_variable ready_cv;  // an item's reads all completed
  std::condition_variable idle_cv;   // nothing in flight, no callback running
  // Items whose bytes are all there, in arrival order: ready[ready_head, end). Reserved for
  // every item up front, so a completing read never allocates.
  std::vector<size_t> ready;
  size_t ready_head = 0;
  std::vector<size_t> pending;  // reads outstanding per item
  std::vector<size_t> reads;    // reads per item
  size_t held = 0;              // reads submitted whose item is not decoded yet
  size_t window = 1;
  size_t next_item = 0;  // the next item whose reads are submitted
  size_t in_flight = 0;  // reads submitted, not completed
  size_t active = 0;     // reads submitted whose callback has not returned yet
  size_t submitted = 0;  // reads submitted so far
  bool pumping = false;
  bool again = false;
  bool cancelled = false;  // submit no more (an error, cancel(), or every item ran)
  // Every read submitted (or none will be): plans started later may take the window now.
  std::atomic<bool> submitted_all{false};
};

bool ReadPlan::Budget::try_take(const InFlight& plan, size_t reads) {
  std::lock_guard lock(mutex_);
  // A plan started earlier with reads still to submit goes first: otherwise the next batch
  // would take every place freed while this one waits for room for a whole gather group.
  for (const std::shared_ptr<InFlight>& earlier : plans_) {
    if (earlier.get() == &plan) break;
    if (!earlier->submitted_all) return false;
  }
  // Whole items: a gather group larger than the window goes alone.
  if (used_ != 0 && used_ + reads > window_) return false;
  if (held_ != 0 && held_ + reads > held_limit_) return false;
  used_ += reads;
  held_ += reads;
  return true;
}

std::vector<std::shared_ptr<ReadPlan::InFlight>> ReadPlan::Budget::release_held(size_t reads) {
  std::lock_guard lock(mutex_);
  held_ -= reads;
  return plans_;
}

std::vector<std::shared_ptr<ReadPlan::InFlight>> ReadPlan::Budget::give_back(size_t reads) {
  std::lock_guard lock(mutex_);
  used_ -= reads;
  return plans_;
}

void ReadPlan::Budget::join(std::shared_ptr<InFlight> plan) {
  std::lock_guard lock(mutex_);
  if (plans_.empty()) {  // one window, whatever later plans resolve to
    window_ = plan->window;
    held_limit_ = window_ * kReadsHeldPerWindow;
  }
  plans_.push_back(std::move(plan));
}

void ReadPlan::Budget::leave(const InFlight* plan) {
  std::lock_guard lock(mutex_);
  std::erase_if(plans_, [&](const auto& p) { return p.get() == plan; });
}

size_t ReadPlan::resolve_io_concurrency(size_t io_concurrency) const {
  if (io_concurrency != kAutoIoConcurrency) return io_concurrency;
  for (const ChunkTask& task : tasks_) {
    if (task.array->source().mapped() == nullptr) {
      return static_cast<size_t>(std::max(1, task.array->store().preferred_concurrency()));
    }
  }
  return 1;
}

// The reads of one pump round that go to one store: submitted with one submit() call, so a
// store can coalesce nearby ranges of a value (HttpStore) or start the whole batch at once.
// Shared by the callbacks: the requests outlive their reads.
struct ReadPlan::Batch {
  const Store* store = nullptr;
  std::vector<ReadRequest> requests;
  std::vector<size_t> tasks;  // requests[k] reads tasks[k] ...
  std::vector<size_t> items;  // ... of work item items[k]
  // Set by the first completion of requests[k]: the store's callback, or the plan's own when
  // submit() threw before starting it (a late callback after that is ignored).
  std::unique_ptr<std::atomic<bool>[]> completed;
};

namespace {
ReadOutcome read_not_started(std::exception_ptr error) {
  return {ReadStatus::kFailed, 0, std::move(error)};
}
}  // namespace

void ReadPlan::pump(const std::shared_ptr<InFlight>& state) {
  InFlight& s = *state;
  std::unique_lock lock(s.mutex);
  if (s.pumping) {  // another thread (or this one, further up the stack) is submitting
    s.again = true;
    return;
  }
  s.pumping = true;
  // Hands a read's outcome to its item (ready when it was the item's last; the ready queue's
  // room is reserved up front) and its place in the window to the plans sharing it, the
  // earliest first.
  const auto complete_read = [this](const std::shared_ptr<InFlight>& owner, size_t item,
                                    size_t task, ReadOutcome outcome) {
    InFlight& o = *owner;
    {
      std::lock_guard guard(o.mutex);
      fetched_[task].outcome = std::move(outcome);
      --o.in_flight;
      if (--o.pending[item] == 0) {
        o.ready.push_back(item);
        o.ready_cv.notify_one();
      }
    }
    for (const std::shared_ptr<InFlight>& plan : o.budget->give_back(1)) plan->plan->pump(plan);
    std::lock_guard guard(o.mutex);
    if (--o.active == 0) o.idle_cv.notify_all();
  };
  std::vector<std::shared_ptr<Batch>> batches;
  do {
    s.again = false;
    // Gather every read the window allows now (whole items: a gather group is never split),
    // then submit them grouped by store, one submit() per store. An item's reads are counted
    // as submitted when it is taken; whatever goes wrong before its store started a read (no
    // memory for a batch, a submit() that throws) completes that read as failed, so the plan
    // never waits for a read that was never started and its decode reports the error.
    batches.clear();
    const size_t round_first = s.next_item;
    std::exception_ptr gather_error;
    try {
      while (!s.cancelled && s.next_item < items_.size()) {
        const size_t i = s.next_item;
        if (s.pending[i] != 0 && !s.budget->try_take(s, s.pending[i])) break;
        ++s.next_item;
        s.in_flight += s.pending[i];
        s.held += s.pending[i];
        s.active += s.pending[i];
        s.submitted += s.pending[i];
        const WorkItem& item = items_[i];
        for (size_t t = item.first; t < item.first + item.count; ++t) {
          if (!fetching_[t] || !fetched_[t].where.found) continue;  // missing: nothing to read
          FetchedChunk& fetched = fetched_[t];
          if (fetched.bytes.capacity() == 0) {  // a buffer from the pool, as the read starts
            fetched.bytes = stored_pool_->take(fetched.where.nbytes.value_or(0));
          }
          const Store* store = fetched.where.store;
          auto batch = std::find_if(batches.begin(), batches.end(),
                                    [&](const auto& b) { return b->store == store; });
          if (batch == batches.end()) {
            batches.push_back(std::make_shared<Batch>());
            batch = std::prev(batches.end());
            (*batch)->store = store;
          }
          (*batch)->requests.push_back(std::move(requests_[t]));
          (*batch)->tasks.push_back(t);
          (*batch)->items.push_back(i);
        }
      }
      for (const std::shared_ptr<Batch>& batch : batches) {
        batch->completed = std::make_unique<std::atomic<bool>[]>(batch->requests.size());
      }
    } catch (...) {
      gather_error = std::current_exception();
    }
    const size_t round_end = s.next_item;
    if (round_end == round_first) continue;
    lock.unlock();
    if (gather_error) {  // nothing of this round was submitted: every read of it fails
      batches.clear();
      for (size_t i = round_first; i < round_end; ++i) {
        for (size_t t = items_[i].first; t < items_[i].first + items_[i].count; ++t) {
          if (fetching_[t] && fetched_[t].where.found) {
            complete_read(state, i, t, read_not_started(gather_error));
          }
        }
      }
    }
    for (std::shared_ptr<Batch>& batch : batches) {
      const std::span<const ReadRequest> requests = batch->requests;
      try {
        batch->store->submit(
            requests, [complete_read, state, batch](size_t k, ReadOutcome outcome) {
              if (batch->completed[k].exchange(true)) return;
              complete_read(state, batch->items[k], batch->tasks[k], std::move(outcome));
            });
      } catch (...) {
        // Store::submit() started none of the requests it has not completed.
        const std::exception_ptr error = std::current_exception();
        for (size_t k = 0; k < requests.size(); ++k) {
          if (batch->completed[k].exchange(true)) continue;
          complete_read(state, batch->items[k], batch->tasks[k], read_not_started(error));
        }
      }
    }
    batches.clear();
    lock.lock();
  } while (s.again);
  const bool now_all = (s.cancelled || s.next_item == items_.size()) && !s.submitted_all;
  if (now_all) s.submitted_all = true;
  s.pumping = false;
  if (s.active == 0) s.idle_cv.notify_all();
  lock.unlock();
  if (now_all) pump_later_plans(s);
}

void ReadPlan::pump_later_plans(const InFlight& plan) {
  bool later = false;
  for (const std::shared_ptr<InFlight>& other : plan.budget->give_back(0)) {
    if (later) other->plan->pump(other);
    later = later || other.get() == &plan;
  }
}

void ReadPlan::start_in_flight(std::vector<ReadScratch>& scratch, ReadStats* stats, size_t window,
                               std::shared_ptr<Budget> budget) {
  const size_t n = tasks_.size();
  if (!stored_pool_) stored_pool_ = std::make_shared<StoredBytesPool>();
  if (fetched_.size() < n) fetched_.resize(n);
  fetching_.assign(n, 0);
  requests_.resize(n);
  auto state = std::make_shared<InFlight>();
  state->plan = this;
  state->budget = std::move(budget);
  state->window = window;
  state->pending.assign(items_.size(), 0);
  state->ready.reserve(items_.size());
  for (size_t i = 0; i < items_.size(); ++i) {
    const WorkItem& item = items_[i];
    for (size_t t = item.first; t < item.first + item.count; ++t) {
      FetchedChunk& fetched = fetched_[t];
      if (!tasks_[t].array->plan_fetch(tasks_[t], scratch[0], stats, fetched)) continue;
      fetching_[t] = 1;
      if (stats) stats->chunks_in_flight += 1;
      if (!fetched.where.found) {
        fetched.outcome = {ReadStatus::kMissing, 0, nullptr};
        continue;
      }
      const ChunkLocation& where = fetched.where;
      requests_[t] = {
          fetched.key,
          where.nbytes ? ByteRange::at(where.offset, *where.nbytes) : ByteRange::whole(),
          {},
          &fetched.bytes};
      ++state->pending[i];
    }
    if (state->pending[i] == 0) state->ready.push_back(i);
  }
  state->reads = state->pending;
  running_ = state;
  state->budget->join(state);
  pump(state);
}

void ReadPlan::settle() {
  const std::shared_ptr<InFlight> state = running_;
  if (!state) return;
  InFlight& s = *state;
  std::unique_lock lock(s.mutex);
  s.cancelled = true;
  // The requests and buffers must outlive their reads.
  s.idle_cv.wait(lock, [&] { return s.in_flight == 0 && s.active == 0 && !s.pumping; });
  const bool now_all = !s.submitted_all;
  s.submitted_all = true;
  const size_t held = std::exchange(s.held, 0);  // items never decoded (an error, cancel())
  lock.unlock();
  if (held != 0) {  // room for the plans waiting for it
    for (const std::shared_ptr<InFlight>& plan : s.budget->release_held(held)) {
      if (plan.get() != &s) plan->plan->pump(plan);
    }
  }
  if (now_all) pump_later_plans(s);  // they waited for this one
  s.budget->leave(&s);
  give_back_fetched(0, fetched_.size());  // reads of items never decoded (an error, cancel())
}

void ReadPlan::give_back_fetched(size_t first, size_t end) {
  for (size_t t = first; t < end; ++t) {
    if (fetched_[t].bytes.capacity() != 0) stored_pool_->give(std::move(fetched_[t].bytes));
  }
}

size_t ReadPlan::reads_submitted() const {
  const std::shared_ptr<InFlight> state = running_;
  if (!state) return 0;
  std::lock_guard lock(state->mutex);
  return state->submitted;
}

void ReadPlan::finish_in_flight(ThreadPool* pool, std::vector<ReadScratch>& scratch,
                                ReadStats* stats) {
  InFlight& s = *running_;
  const auto run_next = [&](size_t worker) {
    size_t i = 0;
    {
      const auto start = Clock::now();
      std::unique_lock lock(s.mutex);
      s.ready_cv.wait(lock, [&] { return s.ready_head < s.ready.size(); });
      i = s.ready[s.ready_head++];
      if (stats) stats->read_ns += elapsed_ns(start);  // a decode thread waiting for storage
    }
    execute_item(items_[i], scratch[worker], stats, /*fetched=*/true);
    if (s.reads[i] == 0) return;
    {
      std::lock_guard lock(s.mutex);
      s.held -= s.reads[i];
    }
    // Decoded: room among the chunks held, for this plan or one read ahead.
    for (const std::shared_ptr<InFlight>& plan : s.budget->release_held(s.reads[i])) {
      plan->plan->pump(plan);
    }
  };
  try {
    if (pool == nullptr) {
      for (size_t k = 0; k < items_.size(); ++k) run_next(0);
    } else {
      pool->parallel_for(items_.size(), [&](size_t, size_t worker) { run_next(worker); });
    }
  } catch (...) {
    settle();
    throw;
  }
  settle();
}

}  // namespace chute
