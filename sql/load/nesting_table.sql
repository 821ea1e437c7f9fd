-- The staging table nesting.sql writes for one batch (in the in-memory
-- staging database). Template: nest (its qualified name), temp (a temporary
-- table instead, named nest: a deferred nesting, session.DEFERRED).
-- trace_id         INTEGER  trace
-- event_id         BIGINT   the host event
-- thread           UBIGINT  hash(trace_id, pid_label, tid_label)
-- parent_event_id  BIGINT   innermost enclosing host event on the thread
-- depth            INTEGER  number of enclosing host events (-1: marked by the first pass)
-- self_ns          BIGINT   duration minus direct children
-- op_event_id      BIGINT   innermost enclosing cpu_op, excluding itself
CREATE OR REPLACE {% if temp %}TEMP {% endif %}TABLE {{ nest }} (trace_id INTEGER, event_id BIGINT, thread UBIGINT, parent_event_id BIGINT,
                                    depth INTEGER, self_ns BIGINT, op_event_id BIGINT)
