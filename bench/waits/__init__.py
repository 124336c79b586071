"""Smart-wait benchmarks: detection latency, idle CPU, frames sent to the vision step."""
