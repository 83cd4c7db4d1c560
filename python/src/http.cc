// HTTP client settings and lifetime, for chute.set_http_options() and the tests.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <type_traits>

#include "bindings.h"
#include "chute/store/http/http_client.h"
#include "chute/util/error.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

// Each option under its Python name, for reading and for setting: one list, so the two agree.
template <typename Options, typename Visit>
void for_each_option(Options& o, Visit&& visit) {
  visit("connect_timeout", o.connect_timeout_s);
  visit("timeout", o.request_timeout_s);
  visit("stall_timeout", o.stall_timeout_s);
  visit("stall_min_bytes_per_s", o.stall_min_bytes_per_s);
  visit("max_retries", o.max_retries);
  visit("backoff", o.backoff_base_s);
  visit("backoff_max", o.backoff_max_s);
  visit("max_in_flight", o.max_in_flight);
  visit("coalesce_gap", o.coalesce_gap);
  visit("coalesce_max", o.coalesce_max);
  visit("split_size", o.split_size);
  visit("verify_tls", o.verify_tls);
}

nb::dict options_dict(const http::HttpOptions& o) {
  nb::dict d;
  for_each_option(o, [&](const char* name, const auto& field) { d[name] = field; });
  return d;
}

}  // namespace

void bind_http(nb::module_& m) {
  m.def("_http_options", [] { return options_dict(http::options()); });
  m.def("_set_http_options", [](const nb::dict& d) {
    http::HttpOptions o = http::options();
    for_each_option(o, [&](const char* name, auto& field) {
      using Field = std::remove_reference_t<decltype(field)>;
      if (d.contains(name)) field = nb::cast<Field>(d[name]);
    });
    http::set_options(o);
  });
  m.def("_http_shutdown", [] {
    nb::gil_scoped_release release;
    http::shutdown();
  });
  m.def("_http_running", [] { return http::running(); });
}

}  // namespace chute::python
