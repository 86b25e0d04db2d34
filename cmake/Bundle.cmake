# The portable bundle (`make package`, target `bundle`): scripts/package.sh
# writes ${ORTGPU_BUNDLE}, bin/ortgpu with lib/ (ONNX Runtime, its CUDA EP and
# every shared library beyond glibc and libstdc++), LICENSES/ and a README.
# Not part of `all`: it is remade only when the binary or what it is made from
# changes (the bundle tests in tests/deploy/ build it as a fixture).
set(ORTGPU_BUNDLE_NAME ortgpu-${PROJECT_VERSION}-linux-x86_64)
set(ORTGPU_BUNDLE ${CMAKE_BINARY_DIR}/${ORTGPU_BUNDLE_NAME}.tar.gz)
add_custom_command(
  OUTPUT ${ORTGPU_BUNDLE}
  COMMAND ${CMAKE_SOURCE_DIR}/scripts/package.sh $<TARGET_FILE:ortgpu> ${ORT_ROOT} ${PROJECT_VERSION}
          ${CMAKE_BINARY_DIR}
  DEPENDS ortgpu ${CMAKE_SOURCE_DIR}/scripts/package.sh ${CMAKE_SOURCE_DIR}/deploy/bundle/README.md
  COMMENT "Packaging ${ORTGPU_BUNDLE_NAME}.tar.gz"
  VERBATIM)
add_custom_target(bundle DEPENDS ${ORTGPU_BUNDLE})
