# ortgpu_fetched_root(VAR SCRIPT DOC HINT): the folder of a dependency that
# scripts/SCRIPT fetches (a pinned npm package, downloaded once and cached;
# the script prints the folder). VAR set on the command line or in the
# environment wins and nothing is fetched. Sets the cache entry VAR.
function(ortgpu_fetched_root var script doc hint)
  set(root ${${var}})
  if(NOT root AND DEFINED ENV{${var}})
    set(root $ENV{${var}})
  endif()
  if(NOT root)
    execute_process(COMMAND ${CMAKE_SOURCE_DIR}/scripts/${script}
      OUTPUT_VARIABLE root OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "scripts/${script} failed; ${hint}")
    endif()
  endif()
  set(${var} ${root} CACHE PATH "${doc}")
  set(${var} ${root} PARENT_SCOPE)
endfunction()
