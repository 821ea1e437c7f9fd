-- trace_interconnects: every device of every trace with its GPU-to-GPU link and
-- that link's peak bandwidth per direction, where duckprof knows it.
--
-- The device is matched to a model as in gpu_devices (peak_device: a device
-- without a deviceProperties entry gets the trace's only model), and the
-- model to a row of interconnect_peaks (seeded from
-- duckprof/data/interconnect.csv: NVLink for SXM-class NVIDIA GPUs, PCIe for
-- PCIe cards, Infinity Fabric for MI300-class AMD GPUs). The figure is the
-- GPU's own links, per direction: what NCCL's bus bandwidth approaches inside
-- one node. Collectives that cross nodes are bounded by the network instead,
-- which a trace does not describe.
--
-- requires: gpu_devices, interconnect_peaks
--
-- Columns:
-- trace_id           INTEGER  trace
-- device             INTEGER  device index
-- peak_device        VARCHAR  the matched model (NULL: no match)
-- interconnect       VARCHAR  e.g. 'NVLink 3 (12 links)' (NULL: not known)
-- interconnect_gbps  DOUBLE   its peak per GPU and direction, GB/s (NULL: not known)
CREATE OR REPLACE VIEW trace_interconnects AS
SELECT d.trace_id, d.device, d.peak_device, i.interconnect, i.gbps AS interconnect_gbps
FROM gpu_devices d
LEFT JOIN (SELECT device, any_value(interconnect) AS interconnect, any_value(gbps) AS gbps
           FROM interconnect_peaks GROUP BY device) i ON i.device = d.peak_device;
