# Embeds a text file (a CUDA kernel source compiled by NVRTC at run time) as a C++ string:
# attune_embed(<var receiving the generated .cpp> <C++ symbol in attune::kernels> <file>).
function(attune_embed out_var symbol file)
  set(src "${CMAKE_CURRENT_SOURCE_DIR}/${file}")
  set(gen "${CMAKE_CURRENT_BINARY_DIR}/embed/${symbol}.cpp")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${src}")
  file(READ "${src}" content)
  file(WRITE "${gen}.tmp"
       "// Generated from ${file}; edit that file.\nnamespace attune::kernels {\nextern const char* const ${symbol};\n"
       "const char* const ${symbol} = R\"ATTUNE_EMBED(${content})ATTUNE_EMBED\";\n}\n")
  file(COPY_FILE "${gen}.tmp" "${gen}" ONLY_IF_DIFFERENT)
  set(${out_var} "${gen}" PARENT_SCOPE)
endfunction()
