// HTTP client settings and lifetime, for chute.set_http_options() and the tests.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "chute/store/http/http_client.h"
#include "chute/util/error.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

nb::dict options_dict(const http::HttpOptions& o) {
  nb::dict d;
  d["connect_timeout"] = o.connect_timeout_s;
  d["timeout"] = o.request_timeout_s;
  d["stall_timeout"] = o.stall_timeout_s;
  d["stall_min_bytes_per_s"] = o.stall_min_bytes_per_s;
  d["max_retries"] = o.max_retries;
  d["backoff"] = o.backoff_base_s;
  d["backoff_max"] = o.backoff_max_s;
  d["max_in_flight"] = o.max_in_flight;
  d["coalesce_gap"] = o.coalesce_gap;
  d["coalesce_max"] = o.coalesce_max;
  d["split_size"] = o.split_size;
  d["verify_tls"] = o.verify_tls;
  return d;
}

template <typename T>
void take(const nb::dict& d, const char* key, T& field) {
  if (d.contains(key)) field = nb::cast<T>(d[key]);
}

}  // namespace

void bind_http(nb::module_& m) {
  m.def("_http_options", [] { return options_dict(http::options()); });
  m.def("_set_http_options", [](const nb::dict& d) {
    http::HttpOptions o = http::options();
    take(d, "connect_timeout", o.connect_timeout_s);
    take(d, "timeout", o.request_timeout_s);
    take(d, "stall_timeout", o.stall_timeout_s);
    take(d, "stall_min_bytes_per_s", o.stall_min_bytes_per_s);
    take(d, "max_retries", o.max_retries);
    take(d, "backoff", o.backoff_base_s);
    take(d, "backoff_max", o.backoff_max_s);
    take(d, "max_in_flight", o.max_in_flight);
    take(d, "coalesce_gap", o.coalesce_gap);
    take(d, "coalesce_max", o.coalesce_max);
    take(d, "split_size", o.split_size);
    take(d, "verify_tls", o.verify_tls);
    http::set_options(o);
  });
  m.def("_http_shutdown", [] {
    nb::gil_scoped_release release;
    http::shutdown();
  });
  m.def("_http_running", [] { return http::running(); });
}

}  // namespace chute::python
