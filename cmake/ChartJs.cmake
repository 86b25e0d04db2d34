# Finds Chart.js (the charting library src/report/ inlines into every HTML
# report) in CHARTJS_ROOT, by default the folder scripts/fetch_chartjs.sh
# prepares from the pinned npm package, and defines
#   ortgpu_embed_chartjs(target)
# which compiles the library and its MIT licence into `target` as byte arrays
# (report/chartjs.h), generated at build time by cmake/EmbedFiles.cmake.
include(FetchedRoot)
ortgpu_fetched_root(CHARTJS_ROOT fetch_chartjs.sh "Chart.js folder (chart.umd.min.js, LICENSE.md)"
  "set CHARTJS_ROOT to a folder holding Chart.js's dist/chart.umd.min.js and LICENSE.md")
foreach(f chart.umd.min.js LICENSE.md)
  if(NOT EXISTS ${CHARTJS_ROOT}/${f})
    message(FATAL_ERROR "CHARTJS_ROOT=${CHARTJS_ROOT} has no ${f}; run scripts/fetch_chartjs.sh")
  endif()
endforeach()
# The library goes inside <script>...</script>: a "</script" in it would end
# the element early, so refuse such a file rather than emit a broken page.
file(READ ${CHARTJS_ROOT}/chart.umd.min.js chartjs_text)
string(TOLOWER "${chartjs_text}" chartjs_text)
string(FIND "${chartjs_text}" "</script" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "${CHARTJS_ROOT}/chart.umd.min.js contains \"</script\"; it cannot be inlined")
endif()
string(REGEX MATCH "chart\\.js v([0-9.]+)" banner "${chartjs_text}")
set(CHARTJS_VERSION ${CMAKE_MATCH_1})
if(NOT CHARTJS_VERSION)
  message(FATAL_ERROR "${CHARTJS_ROOT}/chart.umd.min.js has no \"Chart.js vX.Y.Z\" banner; is it Chart.js?")
endif()
unset(chartjs_text)
message(STATUS "Chart.js ${CHARTJS_VERSION}: ${CHARTJS_ROOT}")

function(ortgpu_embed_chartjs target)
  set(out ${CMAKE_BINARY_DIR}/generated/chartjs_embedded.cc)
  set(js ${CHARTJS_ROOT}/chart.umd.min.js)
  set(license ${CHARTJS_ROOT}/LICENSE.md)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out} -DHEADER=report/chartjs.h -DNAMESPACE=ortgpu::report
      "-DFILES=ChartJsScript=${js}\;ChartJsLicense=${license}" -P ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
    DEPENDS ${js} ${license} ${CMAKE_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "Embedding Chart.js into ${target}")
  target_sources(${target} PRIVATE ${out})
  target_compile_definitions(${target} PRIVATE ORTGPU_CHARTJS_VERSION="${CHARTJS_VERSION}")
endfunction()
