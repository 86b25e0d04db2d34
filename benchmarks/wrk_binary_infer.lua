-- wrk script: POSTs one KServe v2 binary-tensor request over and over.
--   BODY_FILE  the request body: the JSON header followed by the raw tensor bytes
--   JSON_LEN   the JSON header's length in bytes (Inference-Header-Content-Length)
-- Example: BODY_FILE=req.bin JSON_LEN=123 wrk -t4 -c64 -d15s -s wrk_binary_infer.lua \
--            http://127.0.0.1:8000/v2/models/resnet/infer
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = os.getenv("JSON_LEN")
