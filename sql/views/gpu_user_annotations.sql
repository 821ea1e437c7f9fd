-- gpu_user_annotations: the device-side span of record_function ranges (Kineto gpu_user_annotation).
-- trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, external_id, args
CREATE OR REPLACE VIEW gpu_user_annotations AS
SELECT trace_id, event_id, name, coalesce(device, pid::INTEGER) AS device,
       coalesce(stream, tid) AS stream, ts_ns, dur_ns, end_ns, external_id, args
FROM events
WHERE ph = 'X' AND cat = 'gpu_user_annotation';
