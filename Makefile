# The two commands of the README:
#   make run    installs what is missing, builds, and runs `ortgpu doctor`
#   make test   the same setup and build, then every test (what CI runs)
#   make package  the portable bundle build/ortgpu-VERSION-linux-x86_64.tar.gz
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: setup build run test package fuzz clean

setup:
	@scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/ortgpu doctor

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

package: build
	@cmake --build $(BUILD) --target bundle

fuzz: setup
	scripts/fuzz.sh

clean:
	rm -rf $(BUILD)
