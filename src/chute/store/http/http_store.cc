#include "chute/store/http/http_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "chute/store/http/http_parse.h"
#include "chute/util/error.h"

namespace chute {
namespace {

using http::BodySink;
using http::HttpClient;
using http::HttpResult;

ReadOutcome outcome_of(const HttpResult& result, uint64_t nbytes) {
  if (result.ok()) return {ReadStatus::kOk, nbytes, nullptr};
  if (result.status == 404) return {ReadStatus::kMissing, 0, nullptr};
  return {ReadStatus::kFailed, 0, result.error};
}

// Several requests (members of one coalesced GET, or the parts of one split request) that
// finish together.
struct Group {
  std::mutex mutex;
  size_t remaining = 0;
  std::exception_ptr error;
  bool missing = false;
};

}  // namespace

std::string percent_encode_path(std::string_view key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (unsigned char c : key) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || c == '/') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

HttpStore::HttpStore(std::string url, std::function<void(http::HttpRequest&)> sign,
                     std::function<std::string(std::string_view key)> make_url)
    : url_(std::move(url)), sign_(std::move(sign)), make_url_(std::move(make_url)) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
  if (url_.rfind("http://", 0) != 0 && url_.rfind("https://", 0) != 0) {
    fail(ErrorCode::kInvalidArgument, "'{}' is not an http:// or https:// URL", url_);
  }
}

std::string HttpStore::key_url(std::string_view key) const {
  if (make_url_) return make_url_(key);
  if (key.empty()) return url_;
  return url_ + "/" + percent_encode_path(key);
}

http::HttpRequest HttpStore::make_request(std::string_view key, const ByteRange& range) const {
  http::HttpRequest request;
  request.url = key_url(key);
  request.range = range;
  request.what = "key '" + std::string(key) + "'";
  request.sign = sign_;
  return request;
}

std::optional<uint64_t> HttpStore::size(std::string_view key) const {
  http::HttpRequest request = make_request(key, ByteRange::whole());
  request.method = "HEAD";
  HttpResult result = HttpClient::instance().fetch(std::move(request));
  if (result.status == 404) return std::nullopt;
  if (result.status == 405 || result.status == 501) {
    // No HEAD: a one-byte range tells the size through Content-Range.
    ByteBuffer one;
    result =
        HttpClient::instance().fetch(make_request(key, ByteRange::at(0, 1)), BodySink{{}, &one});
    if (result.status == 404) return std::nullopt;
  }
  if (!result.ok()) std::rethrow_exception(result.error);
  if (!result.object_size) {
    fail(ErrorCode::kUnavailable, "HEAD {}: the server sent no Content-Length", key_url(key));
  }
  return result.object_size;
}

bool HttpStore::read(std::string_view key, ByteBuffer& out) const {
  ReadRequest request{std::string(key), ByteRange::whole(), {}, &out};
  return check_outcome(read_all({&request, 1})[0]);
}

bool HttpStore::read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const {
  if (out.empty()) return size(key).has_value();
  ReadRequest request{std::string(key), ByteRange::at(offset, out.size()), out, nullptr};
  return check_outcome(read_all({&request, 1})[0]);
}

int HttpStore::preferred_concurrency() const { return http::options().max_in_flight; }

std::vector<std::string> HttpStore::list(std::string_view prefix) const {
  fail(ErrorCode::kUnsupported,
       "cannot list '{}' over HTTP (a web server has no listing): open arrays by their path, or "
       "groups that have consolidated metadata (zarr.consolidate_metadata)",
       key_url(prefix));
}

// One transfer to start: its completion is shared so that submit() can still run it (with the
// error) when start() throws without starting it.
struct HttpStore::Launch {
  http::HttpRequest request;
  BodySink sink;
  std::shared_ptr<http::Completion> done;
};

namespace {

ReadOutcome failed_with(std::exception_ptr error) {
  return {ReadStatus::kFailed, 0, std::move(error)};
}

}  // namespace

void HttpStore::start_transfer(http::HttpRequest request, BodySink sink,
                               http::Completion done) const {
  HttpClient::instance().start(std::move(request), sink, std::move(done));
}

void HttpStore::submit(std::span<const ReadRequest> requests, const ReadCallback& done) const {
  if (requests.empty()) return;
  // Phase 1 prepares every transfer and starts none, so a failure there (out of memory, a
  // key the URL maker refuses) fails the requests not completed yet and nothing runs. Phase 2
  // only starts: a start() that throws has started nothing, and the transfers not started are
  // completed through their own completion with the error, which completes each of their
  // requests once, after every transfer of it that did start has ended (a split range's parts).
  std::vector<char> completed(requests.size(), 0);  // by phase 1, synchronously
  std::vector<Launch> launches;
  try {
    prepare_launches(requests, done, completed, launches);
  } catch (...) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (!completed[i]) done(i, failed_with(std::current_exception()));
    }
    return;
  }
  size_t next = 0;
  while (next < launches.size()) {
    Launch& launch = launches[next];
    try {
      std::shared_ptr<http::Completion> completion = launch.done;
      start_transfer(std::move(launch.request), launch.sink,
                     [completion](HttpResult result) { (*completion)(std::move(result)); });
      ++next;
    } catch (...) {
      HttpResult result;
      result.error = std::current_exception();
      (*launch.done)(std::move(result));
      ++next;
    }
  }
}

void HttpStore::prepare_launches(std::span<const ReadRequest> requests, const ReadCallback& done,
                                 std::vector<char>& completed,
                                 std::vector<Launch>& launches) const {
  const http::HttpOptions opts = http::options();
  // The caller's callback need not outlive submit(); the completions share a copy.
  auto shared_done = std::make_shared<ReadCallback>(done);
  auto complete_now = [&](size_t i, ReadOutcome outcome) {
    completed[i] = 1;
    done(i, std::move(outcome));
  };
  auto internal = [&](const ReadRequest& r, const char* why) {
    return failed_with(
        std::make_exception_ptr(Error(ErrorCode::kInternal, "'" + r.key + "': " + why)));
  };
  auto add = [&](http::HttpRequest request, BodySink sink, http::Completion completion) {
    launches.push_back(Launch{std::move(request), sink,
                              std::make_shared<http::Completion>(std::move(completion))});
  };
  // Known-offset, known-length requests per key: candidates for coalescing.
  std::map<std::string_view, std::vector<size_t>> by_key;
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& r = requests[i];
    if (r.into.empty() && r.buffer == nullptr) {
      complete_now(i, internal(r, "a read with nowhere to put it"));
      continue;
    }
    if (r.range.suffix && !r.range.length) {
      complete_now(i, internal(r, "a suffix range needs a length"));
      continue;
    }
    std::optional<uint64_t> length = r.range.length;
    if (!length && !r.range.suffix && !r.into.empty()) length = r.into.size();
    if (!r.range.suffix && length && !r.into.empty() && *length != r.into.size()) {
      complete_now(i, internal(r, "a range longer than its buffer"));
      continue;
    }
    if (!r.range.suffix && length && *length == 0) {
      if (r.buffer) r.buffer->resize(0);
      complete_now(i, {ReadStatus::kOk, 0, nullptr});
      continue;
    }
    if (!r.range.suffix && length) {
      by_key[r.key].push_back(i);
      continue;
    }
    // Whole, open-ended or suffix: one GET straight into the request's sink.
    add(make_request(r.key, r.range), BodySink{r.into, r.buffer},
        [i, shared_done](HttpResult result) {
          (*shared_done)(i, outcome_of(result, result.nbytes));
        });
  }
  for (auto& [key, indices] : by_key) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (size_t i : indices) {
      const ReadRequest& r = requests[i];
      const uint64_t length = r.range.length ? *r.range.length : r.into.size();
      ranges.emplace_back(r.range.offset, r.range.offset + length);
    }
    for (const http::CoalescedRead& read :
         http::coalesce_ranges(ranges, opts.coalesce_gap, opts.coalesce_max)) {
      if (read.members.size() == 1) {
        const size_t i = indices[read.members[0]];
        const ReadRequest& r = requests[i];
        const uint64_t length = read.end - read.begin;
        std::span<std::byte> into = r.into;
        if (into.empty()) {
          r.buffer->resize_for_overwrite(size_t(length));
          into = r.buffer->span();
        }
        const auto parts = http::split_range(read.begin, read.end, opts.split_size);
        if (parts.size() == 1) {
          add(make_request(r.key, ByteRange::at(read.begin, length)), BodySink{into, nullptr},
              [i, length, shared_done](HttpResult result) {
                (*shared_done)(i, outcome_of(result, length));
              });
          continue;
        }
        // A long range: its parts go out in parallel, into their slices of the destination.
        auto group = std::make_shared<Group>();
        group->remaining = parts.size();
        for (const auto& [begin, end] : parts) {
          add(make_request(r.key, ByteRange::at(begin, end - begin)),
              BodySink{into.subspan(size_t(begin - read.begin), size_t(end - begin)), nullptr},
              [i, length, group, shared_done](HttpResult result) {
                const ReadCallback& done = *shared_done;
                std::unique_lock lock(group->mutex);
                if (result.status == 404)
                  group->missing = true;
                else if (!result.ok() && !group->error)
                  group->error = result.error;
                if (--group->remaining != 0) return;
                lock.unlock();
                if (group->error)
                  done(i, {ReadStatus::kFailed, 0, group->error});
                else if (group->missing)
                  done(i, {ReadStatus::kMissing, 0, nullptr});
                else
                  done(i, {ReadStatus::kOk, length, nullptr});
              });
        }
        continue;
      }
      // Several nearby ranges: one GET into a scratch buffer, then each slice is copied out.
      auto scratch = std::make_shared<ByteBuffer>(size_t(read.end - read.begin));
      std::vector<size_t> members;
      for (size_t m : read.members) members.push_back(indices[m]);
      const uint64_t base = read.begin;
      add(make_request(key, ByteRange::at(read.begin, read.end - read.begin)),
          BodySink{scratch->span(), nullptr},
          [scratch, members = std::move(members), base, requests, shared_done](HttpResult result) {
            const ReadCallback& done = *shared_done;
            for (size_t i : members) {
              const ReadRequest& r = requests[i];
              const uint64_t length = r.range.length ? *r.range.length : r.into.size();
              if (!result.ok()) {
                done(i, outcome_of(result, 0));
                continue;
              }
              std::span<std::byte> into = r.into;
              if (into.empty()) {
                // Allocation is the only failure left here, and a callback must not throw.
                try {
                  r.buffer->resize_for_overwrite(size_t(length));
                } catch (...) {
                  done(i, failed_with(std::current_exception()));
                  continue;
                }
                into = r.buffer->span();
              }
              std::memcpy(into.data(), scratch->data() + (r.range.offset - base), size_t(length));
              done(i, {ReadStatus::kOk, length, nullptr});
            }
          });
    }
  }
}

}  // namespace chute
