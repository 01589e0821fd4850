# Debian packages (CPack DEB), one per component: sparrowd (the server with its dashboard built in,
# the systemd unit, /etc/sparrow/sparrow.yaml, its system user), sparrow (the CLI) and sparrowctl.
# deploy/package.sh builds them into build/packages/. The architecture is the build's target, so
# a cross build (cmake/aarch64-linux-gnu.cmake) makes arm64 packages.

# `cpack` installs what the packages hold: the three programs, not the tests beside them (which
# "all", and so the install target, would build first).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(debian_dir ${PROJECT_SOURCE_DIR}/deploy/debian)

install(TARGETS sparrowd RUNTIME DESTINATION bin COMPONENT sparrowd)
install(FILES ${debian_dir}/sparrowd.service DESTINATION /lib/systemd/system COMPONENT sparrowd)
install(FILES ${debian_dir}/sparrow.sysusers DESTINATION lib/sysusers.d RENAME sparrow.conf
        COMPONENT sparrowd)
install(TARGETS sparrow RUNTIME DESTINATION bin COMPONENT sparrow)
if(TARGET sparrowctl)
  install(TARGETS sparrowctl RUNTIME DESTINATION bin COMPONENT sparrowctl)
endif()

# /etc/sparrow/sparrow.yaml: config/sparrow.yaml (every key, documented) with the paths of an
# installed system. Each replaced line must still be there, so that an edit of config/sparrow.yaml
# cannot leave a build-tree path in the package unnoticed. (No ';' in them: CMake lists.)
file(READ ${PROJECT_SOURCE_DIR}/config/sparrow.yaml installed_yaml)
set(yaml_edits
    "sparrowd --config config/sparrow.yaml"
    "sparrowd --config /etc/sparrow/sparrow.yaml\n# (the sparrowd package installed it here: after a change, systemctl restart sparrowd)"
    "model: ../shared/models/stories260K.gguf  # GGUF file to serve (relative to the working dir)"
    "model: /var/lib/sparrow/models/model.gguf  # GGUF file to serve (/var/lib/sparrow is sparrowd's)"
    "model_dir: \"\"            # .gguf files an operator may switch to (admin reload)"
    "model_dir: /var/lib/sparrow/models  # .gguf files an operator may switch to (admin reload)")
list(LENGTH yaml_edits n_edits)
math(EXPR last "${n_edits} - 1")
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET yaml_edits ${i} from)
  list(GET yaml_edits ${j} to)
  string(FIND "${installed_yaml}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "cmake/packaging.cmake: config/sparrow.yaml no longer has '${from}'; "
                        "update the installed config's edits")
  endif()
  string(REPLACE "${from}" "${to}" installed_yaml "${installed_yaml}")
endforeach()
set(installed_yaml_file ${CMAKE_BINARY_DIR}/packaging/sparrow.yaml)
file(CONFIGURE OUTPUT ${installed_yaml_file} CONTENT "${installed_yaml}" @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/config/sparrow.yaml)
# 0640 in the package already (never world-readable, even before the postinst gives it to the
# sparrow group): it may hold admin_key.
install(FILES ${installed_yaml_file} DESTINATION /etc/sparrow COMPONENT sparrowd
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/packaging/conffiles CONTENT "/etc/sparrow/sparrow.yaml\n")

# dpkg's name for the target architecture.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(deb_arch amd64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(deb_arch arm64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^armv7")
  set(deb_arch armhf)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(i[3-6]86|x86)$")
  set(deb_arch i386)
else()
  message(FATAL_ERROR "cmake/packaging.cmake: no Debian architecture known for "
                      "CMAKE_SYSTEM_PROCESSOR '${CMAKE_SYSTEM_PROCESSOR}'")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sparrow)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Sparrow maintainers <sparrow@localhost>")
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL sparrowd sparrow)
if(TARGET sparrowctl)
  list(APPEND CPACK_COMPONENTS_ALL sparrowctl)
endif()
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${deb_arch})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_SPARROWD_PACKAGE_NAME sparrowd)
set(CPACK_DEBIAN_SPARROWD_PACKAGE_DEPENDS adduser)
# One string each (several would be a CMake list): the first line is the summary.
set(CPACK_DEBIAN_SPARROWD_DESCRIPTION "LLM inference server for edge devices (daemon)
sparrowd serves one GGUF model over an OpenAI-compatible HTTP API and gRPC, with a web
dashboard, as a systemd service (sparrowd.service) configured in /etc/sparrow/sparrow.yaml.")
set(CPACK_DEBIAN_SPARROWD_PACKAGE_CONTROL_EXTRA
    ${debian_dir}/postinst ${debian_dir}/prerm ${debian_dir}/postrm
    ${CMAKE_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_SPARROW_PACKAGE_NAME sparrow)
set(CPACK_DEBIAN_SPARROW_DESCRIPTION "LLM inference for edge devices (command-line tool)
sparrow generates, converts, quantizes, profiles and benchmarks GGUF models.")
set(CPACK_DEBIAN_SPARROWCTL_PACKAGE_NAME sparrowctl)
set(CPACK_DEBIAN_SPARROWCTL_DESCRIPTION "Remote control of a sparrowd server
sparrowctl shows and steers a running sparrowd over its admin API.")
include(CPack)
