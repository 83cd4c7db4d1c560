# The C++ API: the public headers (the stable API, docs/frameworks/cpp.md) and what they include.
#
# CHUTE_PUBLIC_HEADERS are the headers a C++ user includes: opening arrays and groups, reading
# boxes, the Store interface and the local stores, the Loader with its datasets, batches and
# samplers, errors, the version, and the value types those take and return (array metadata,
# data types, strided destinations, the byte buffer of Store::read, the cache options), the
# option tables and the memory kinds (a device, an allocator, the delivery stage) the Loader takes.
# Everything else is internal and may change between versions. A public header names an engine
# type it does not hold by value (ReadPlan, ThreadPool, chunk sources, codec chains) with a
# forward declaration, so the engine's headers stay in the source tree; an internal header is
# installed only when a public header includes it (so that it compiles), and then declares
# nothing outside namespace chute::detail (python/tests/test_cmake_package.py checks both).
set(CHUTE_PUBLIC_HEADERS
    chute/loader.h
    chute/array/array.h
    chute/array/metadata.h
    chute/array/strided_view.h
    chute/vocab/dtype.h
    chute/vocab/codec_spec.h
    chute/format/open.h
    chute/format/group.h
    chute/format/zarr.h
    chute/format/npy.h
    chute/format/hdf5.h
    chute/store/store.h
    chute/store/file_store.h
    chute/store/memory_store.h
    chute/store/caching_store.h
    chute/util/byte_buffer.h
    chute/dataset/dataset.h
    chute/dataset/packed_dataset.h
    chute/dataset/window_dataset.h
    chute/dataset/crop_dataset.h
    chute/dataset/anemoi_dataset.h
    chute/dataset/cube_symmetry.h
    chute/pipeline/loader.h
    chute/pipeline/batch.h
    chute/pipeline/transforms.h
    chute/pipeline/device_delivery.h
    chute/pipeline/buffer_pool.h
    chute/device/device.h
    chute/util/buffer_allocator.h
    chute/util/option_table.h
    chute/util/float16.h
    chute/sampler/sampler.h
    chute/util/error.h)

# Sets `out` to `headers` (paths below `source_dir`, e.g. chute/array/array.h) and every header
# of `source_dir` they include with #include "chute/...", transitively.
function(chute_header_closure out source_dir)
  set(pending ${ARGN})
  set(done)
  while(pending)
    list(POP_FRONT pending header)
    if(header IN_LIST done OR NOT EXISTS ${source_dir}/${header})
      continue()
    endif()
    list(APPEND done ${header})
    file(STRINGS ${source_dir}/${header} includes REGEX "^#include \"chute/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      list(APPEND pending ${included})
    endforeach()
  endwhile()
  list(SORT done)
  set(${out} ${done} PARENT_SCOPE)
endfunction()
