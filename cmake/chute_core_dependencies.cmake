# What chute_core needs from the system. Included by the build (CMakeLists.txt) and by the
# installed package (chuteConfig.cmake), so a dependency added here is found in both places.
# Adding a PRIVATE dependency to chute_core: find it here, then name it in CHUTE_CORE_PRIVATE_LIBS,
# e.g. `chute_find_dependency(Foo)` (or pkg_check_modules) and `Foo::Foo`. A wheel picks it up too
# (auditwheel copies the shared library in).
include(CMakeFindDependencyMacro)

# find_package(... REQUIRED) in the build; find_dependency (which fails find_package(chute)
# cleanly, naming what is missing) in the installed package.
macro(chute_find_dependency)
  if(CHUTE_FINDING_INSTALLED_PACKAGE)
    find_dependency(${ARGV})
  else()
    find_package(${ARGV} REQUIRED)
  endif()
endmacro()

chute_find_dependency(Threads)
chute_find_dependency(ZLIB)
chute_find_dependency(nlohmann_json 3.10)
chute_find_dependency(fmt)
chute_find_dependency(PkgConfig)
# A static chute_core carries its private dependencies into whoever links it, so the installed
# package recreates these imported targets too. libcurl (Debian's libcurl4-openssl-dev) drives the HTTP
# client under src/chute/store/http/. For the object stores (src/chute/store/s3_*.cc,
# aws_*.cc), libcrypto (OpenSSL, Debian's libssl-dev) computes AWS Signature V4's SHA-256 and
# HMAC, and expat (libexpat1-dev) parses S3's XML listings and error bodies. libdeflate
# (libdeflate-dev) inflates zlib/gzip chunks of known size (src/chute/codec/gzip_codec.cc); zlib
# decodes streams of unknown size and encodes.
set(CHUTE_CORE_PUBLIC_LIBS nlohmann_json::nlohmann_json fmt::fmt Threads::Threads)
set(CHUTE_CORE_PRIVATE_LIBS ZLIB::ZLIB)
foreach(module BLOSC:blosc ZSTD:libzstd LZ4:liblz4 CURL:libcurl CRYPTO:libcrypto EXPAT:expat
               DEFLATE:libdeflate)
  string(REPLACE ":" ";" module ${module})
  list(GET module 0 prefix)
  list(GET module 1 package)
  if(NOT TARGET PkgConfig::${prefix})
    pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${package})
  endif()
  list(APPEND CHUTE_CORE_PRIVATE_LIBS PkgConfig::${prefix})
endforeach()
# The HDF5 filters of src/chute/codec/{bzip2,lzf,szip}_codec.cc: LZF (liblzf-dev, pkg-config), bzip2 (libbz2-dev)
# and szip (libaec-dev's szlib-compatible libsz). The last two ship no pkg-config file and FindBZip2 try-compiles C, so
# they are found by name.
if(NOT TARGET PkgConfig::LZF)
  pkg_check_modules(LZF REQUIRED IMPORTED_TARGET liblzf)
endif()
list(APPEND CHUTE_CORE_PRIVATE_LIBS PkgConfig::LZF)
foreach(library bz2:bzlib.h:libbz2-dev sz:szlib.h:libaec-dev)
  string(REPLACE ":" ";" library ${library})
  list(GET library 0 name)
  list(GET library 1 header)
  list(GET library 2 debian)
  if(NOT TARGET chute_lib${name})
    find_path(CHUTE_LIB${name}_INCLUDE_DIR ${header})
    find_library(CHUTE_LIB${name}_LIBRARY ${name})
    if(NOT CHUTE_LIB${name}_INCLUDE_DIR OR NOT CHUTE_LIB${name}_LIBRARY)
      message(FATAL_ERROR "chute needs lib${name} (Debian: ${debian}) for its HDF5 filters")
    endif()
    add_library(chute_lib${name} UNKNOWN IMPORTED)
    set_target_properties(
      chute_lib${name} PROPERTIES IMPORTED_LOCATION "${CHUTE_LIB${name}_LIBRARY}"
                                  INTERFACE_INCLUDE_DIRECTORIES "${CHUTE_LIB${name}_INCLUDE_DIR}")
  endif()
  list(APPEND CHUTE_CORE_PRIVATE_LIBS chute_lib${name})
endforeach()
# dlopen, for the CUDA driver (src/chute/device/cuda_driver.cc), which is loaded at run time.
list(APPEND CHUTE_CORE_PRIVATE_LIBS ${CMAKE_DL_LIBS})
