# Finds ONNX Runtime in ORT_ROOT (an official release layout: include/, lib/),
# by default the folder scripts/fetch_ort.sh prepares, and copies its shared
# libraries, the CUDA execution provider's among them, into ${ORTGPU_LIB_DIR}
# beside the binaries. CUDA itself is never linked: it is found at run time.
include(FetchedRoot)
ortgpu_fetched_root(ORT_ROOT fetch_ort.sh "ONNX Runtime release folder (include/, lib/)"
  "set ORT_ROOT to an ONNX Runtime release")
find_path(ORT_INCLUDE_DIR onnxruntime_cxx_api.h PATHS ${ORT_ROOT}/include
  ${ORT_ROOT}/include/onnxruntime NO_DEFAULT_PATH REQUIRED)
find_file(ORT_LIBRARY libonnxruntime.so.1 PATHS ${ORT_ROOT}/lib NO_DEFAULT_PATH REQUIRED)
message(STATUS "ONNX Runtime: ${ORT_ROOT}")

set(ORTGPU_LIB_DIR ${CMAKE_BINARY_DIR}/lib)
file(MAKE_DIRECTORY ${ORTGPU_LIB_DIR})
file(GLOB ORT_SHARED_LIBS ${ORT_ROOT}/lib/libonnxruntime*.so*)
foreach(lib ${ORT_SHARED_LIBS})
  get_filename_component(name ${lib} NAME)
  if(NOT EXISTS ${ORTGPU_LIB_DIR}/${name})
    # A hard link costs no space for the 230 MB CUDA provider; a copy where
    # the cache is on another file system.
    file(CREATE_LINK ${lib} ${ORTGPU_LIB_DIR}/${name} COPY_ON_ERROR)
  endif()
endforeach()

add_library(ortgpu::onnxruntime SHARED IMPORTED GLOBAL)
set_target_properties(ortgpu::onnxruntime PROPERTIES
  IMPORTED_LOCATION ${ORTGPU_LIB_DIR}/libonnxruntime.so.1
  IMPORTED_SONAME libonnxruntime.so.1
  INTERFACE_INCLUDE_DIRECTORIES ${ORT_INCLUDE_DIR}
)
