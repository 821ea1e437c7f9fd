-- categories: the lists of canonical event categories (events.cat) that
-- several SQL files test against, spelled once. A file imports the lists it
-- needs and the sql_list macro, and writes e.g. cat IN sql_list(device_cats)
-- (in a Jinja expression), which renders ('kernel', 'gpu_memcpy', ...);
-- sql_array renders the same items as a list literal, for list functions.
--
-- canonical_cats  Kineto's activity type names (libkineto ActivityType.h, up to
--                 2026) and the flow / trace-span ones: insert_events.sql keeps
--                 these as written and lowercases other spellings of case to them
-- device_cats     activity that runs on the device (gpu_ops): kernels, memcpys,
--                 memsets and MTIA's device compute events
-- runtime_cats    host-side runtime / driver API calls that launch device work
--                 (runtime view): CUDA, HIP, Intel XPU, PrivateUse1 backends, MTIA
-- math_categories kernel_categories.category values of the kernels that do an
--                 op's math: kernel_estimates gives them the op's FLOPs (but to
--                 conv_helpers, conv kernels that do no math)
-- conv_helpers  the names of MIOpen's and cuDNN's layout-transform and tensor-op kernels
--                 that they launch inside their convolutions: category conv (by name,
--                 kernel_categories), but per event see helpers_outside_conv
-- is_conv_op(name)  a cpu_op name that is a convolution (forward, backward,
--                 transposed; aten's, cuDNN's, MIOpen's, autograd's *ConvolutionBackward*)
-- helpers_outside_conv(e, x, q)  a LEFT JOIN of the device events `e` (an alias with
--                 trace_id, event_id) to x (trace_id, event_id: NULL but for the events named as
--                 conv_helpers whose launching op (launches.op_event_id) is known and
--                 is no convolution nor inside one (no convolution op encloses it on its
--                 thread): a transpose or tensor op of its own, e.g. of aten::permute or copy_
--                 (q: a catalog prefix, 'a.'; launch_filter: a condition on its launches l)).
--                 Their category is not conv but elementwise
--                 (event_category): the category of the strided copies that PyTorch's own
--                 copy_ / contiguous run (direct_copy elementwise_kernel); TraceLens also
--                 counts the helpers by their op. A helper without a known op (its launch
--                 call is not in the trace) keeps its name's category, conv.
-- event_category(c, x)  a device event's category: c.category, but elementwise for a
--                 conv helper outside a convolution (x: the alias helpers_outside_conv joined)
-- device_kind(cat, name)  the kind of a device event (a row of device_cats):
--                 'kernel', 'memcpy' or 'memset'. Kineto's kernel / gpu_memcpy /
--                 gpu_memset, and for other vendors' accelerator activity
--                 (MTIA's mtia_ccp_events) the name: DMA transfers (dma*, and
--                 Memcpy* / Memset*, HTA's MEMORY rule) are copies, the rest is
--                 compute, i.e. kernels
-- not_host_cats   complete events that are not host-thread intervals and so are
--                 left out of nesting: device activity, GPU-side annotations and
--                 the trace span
-- categorized(rules): a SELECT of (kind, name, category, by_rule), one row per
--                 distinct device activity name (kernel_categories): the category
--                 of the first row of a rules file that matches the name, else
--                 the view's. With rules true the file is the bound parameter
--                 $rules: a CSV whose header names the columns pattern and
--                 category (others are ignored); pattern is an RE2 regex searched
--                 in the name, case-insensitive. by_rule: a file rule matched.
{%- set canonical_cats = ['kernel', 'cpu_op', 'cuda_runtime', 'cuda_driver', 'gpu_memcpy', 'gpu_memset',
    'ac2g', 'fwdbwd', 'user_annotation', 'gpu_user_annotation', 'python_function', 'cpu_instant_event',
    'trace', 'overhead', 'cuda_sync', 'cuda_event', 'cuda_profiler_range', 'external_correlation',
    'glow_runtime', 'mtia_runtime', 'mtia_ccp_events', 'mtia_insight', 'mtia_counters', 'hpu_op',
    'hip_runtime', 'hip_driver', 'xpu_runtime', 'xpu_driver', 'xpu_sync', 'collective_comm',
    'privateuse1_runtime', 'privateuse1_driver'] %}
{%- set device_cats = ['kernel', 'gpu_memcpy', 'gpu_memset', 'mtia_ccp_events'] %}
{%- set runtime_cats = ['cuda_runtime', 'cuda_driver', 'hip_runtime', 'hip_driver', 'xpu_runtime',
    'xpu_driver', 'privateuse1_runtime', 'privateuse1_driver', 'mtia_runtime'] %}
{%- set not_host_cats = device_cats + ['gpu_user_annotation', 'trace'] %}
{%- set math_categories = ['gemm', 'conv', 'attention', 'triton_template'] %}
{#- The helper kernels that MIOpen and cuDNN launch inside their convolutions (forward and
    backward): MIOpen's layout transforms for its NHWC and 1x1 solvers (batched_transpose_<tile>_<dtype>,
    transpose_NCHW2CNHW_* / transpose_CNHW2NCHW_*) and tensor set, scale and cast of the output and
    workspace (SubTensorOpWithScalar*, SubTensorOpWithCastTensor*); cuDNN's layout transforms
    ([cudnn::ops::] or [cudnn::engines_precompiled::]nchwToNhwcKernel / nhwcToNchwKernel, around an NHWC kernel of an NCHW tensor).
    TraceLens counts them under its CONV_fwd / CONV_bwd (by their op); they do none of the
    convolution's math. An RE2 regex on the lowercased name. -#}
{%- set conv_helpers = '^(batched_transpose_|transpose_(nchw|cnhw|nhwc)2(nchw|cnhw|nhwc)|subtensorop|(void )?(cudnn::[a-z_]+::)?(nchwtonhwc|nhwctonchw)kernel<)' %}
{#- Tensor Cores, as TensorBoard's PyTorch profiler plugin decides them (torch-tb-profiler,
    kineto tb_plugin/torch_tb_profiler/profiler/tensor_core.py at 041e7ce99f, after NVIDIA PyProf's
    prof/tc.py): a kernel uses Tensor Cores when its name contains one of plugin_tensor_core_kernel_patterns
    (case-sensitive substrings: TC_Allowlist); an operator is eligible for them when its name is one
    of plugin_tensor_core_op_names (TC_OP_Allowlist: autocast's fp16 ops and their backward functions).
    The plugin's lists predate Hopper, Blackwell and AMD's matrix cores: on their traces nothing
    matched (B200, MI300X: 0%), so newer kernel families that only run on Tensor Cores (or AMD's
    Matrix Cores) follow the plugin's (newer_tensor_core_kernel_patterns: cuBLAS's nvjet GEMMs but
    its FP32 nvjet_sss, CUTLASS's tensorop, Hopper's (w)gmma, FlashAttention's and cuDNN's fused
    attention, FP8/FP4 operands (E4m3, E5m2, E2m1), Tensile's matrix-instruction kernels
    (_MI16x16x16...), composable kernel's xdl/xdlops, MIOpen's xdlops iGEMM (igemm_*_gtcx*), mfma, wmma), and so do the attention and
    scaled-matmul operators that launch them (newer_tensor_core_op_names); the plugin's own cases
    give what the plugin gives. -#}
{%- set plugin_tensor_core_kernel_patterns = ['h884', 's884', 'h1688', 's1688', 'hmma', 'i8816', '16816',
    'dgrad_1x1_stride_2x2', 'first_layer_wgrad_kernel', 'conv1x1', 'conv2d_c1_k1', 'direct_group',
    'xmma_implicit_gemm', 'xmma_sparse_conv', 'xmma_warp_specialized_implicit_gemm', 'xmma_gemm',
    'xmma_sparse_gemm', 'c1688'] %}
{%- set newer_tensor_core_kernel_patterns = ['nvjet_([^s]|s[^s]|ss[^s])', 'tensorop', 'gmma',
    'flash_fwd', 'flash_bwd', 'fmhaSm', 'fmha_cutlass[FB]_(bf16|f16)', 'E4m3', 'E5m2', 'E2m1',
    '_MI[0-9]+x[0-9]+x[0-9]+', 'xdl', 'igemm_[a-z]+_gtcx', 'mfma', 'wmma'] %}
{%- set plugin_tensor_core_op_names = ['aten::_convolution', 'aten::conv1d', 'aten::conv2d', 'aten::conv3d',
    'aten::conv_tbc', 'aten::conv_transpose1d', 'aten::conv_transpose2d', 'aten::conv_transpose3d',
    'aten::convolution', 'aten::cudnn_convolution', 'aten::cudnn_convolution_transpose', 'aten::prelu',
    'aten::addmm', 'aten::addmv', 'aten::addr', 'aten::matmul', 'aten::mm', 'aten::mv', 'aten::linear',
    'aten::addbmm', 'aten::baddbmm', 'aten::bmm', 'aten::chain_matmul', 'aten::linalg_multi_dot',
    'aten::_thnn_fused_lstm_cell', 'aten::_thnn_fused_gru_cell', 'aten::lstm_cell', 'aten::gru_cell',
    'aten::rnn_tanh_cell', 'aten::rnn_relu_cell', 'CudnnConvolutionBackward', 'BmmBackward0',
    'aten::cudnn_convolution_transpose_backward', 'CudnnConvolutionTransposeBackward', 'MmBackward',
    'aten::cudnn_convolution_backward_weight', 'aten::addmm_', 'AddmvBackward', 'MvBackward',
    'aten::cudnn_convolution_transpose_backward_weight', 'aten::cudnn_convolution_transpose_backward_input',
    'AddmmBackward', 'aten::cudnn_convolution_backward_input', 'AddbmmBackward',
    'aten::cudnn_convolution_backward'] %}
{%- set newer_tensor_core_op_names = ['aten::_scaled_mm', 'aten::_scaled_grouped_mm', 'aten::_grouped_mm',
    'aten::_int_mm', 'aten::einsum', 'aten::scaled_dot_product_attention',
    'aten::_scaled_dot_product_flash_attention', 'aten::_scaled_dot_product_efficient_attention',
    'aten::_scaled_dot_product_cudnn_attention', 'aten::_flash_attention_forward',
    'aten::_flash_attention_backward', 'aten::_efficient_attention_forward',
    'aten::_efficient_attention_backward', 'aten::_scaled_dot_product_flash_attention_backward',
    'aten::_scaled_dot_product_efficient_attention_backward',
    'aten::_scaled_dot_product_cudnn_attention_backward'] %}
{%- set tensor_core_kernel_patterns = plugin_tensor_core_kernel_patterns + newer_tensor_core_kernel_patterns %}
{%- set tensor_core_op_names = plugin_tensor_core_op_names + newer_tensor_core_op_names %}
{#- uses_tensor_cores(name): whether a kernel of that name uses Tensor Cores (the rule above) -#}
{% macro uses_tensor_cores(name='name') -%}
regexp_matches({{ name }}, '{{ tensor_core_kernel_patterns | join('|') }}')
{%- endmacro %}
{% macro device_kind(cat='cat', name='name') -%}
CASE {{ cat }} WHEN 'kernel' THEN 'kernel' WHEN 'gpu_memcpy' THEN 'memcpy' WHEN 'gpu_memset' THEN 'memset'
    ELSE CASE WHEN {{ name }} LIKE 'dma%' OR {{ name }} LIKE 'Memcpy%' THEN 'memcpy'
              WHEN {{ name }} LIKE 'Memset%' THEN 'memset' ELSE 'kernel' END END
{%- endmacro %}
{#- device_index(p): a device event's device: its args' device, else its pid (Kineto writes the
    GPU's index as the pid); a pid beyond INTEGER is no GPU index: NULL, not a failed cast -#}
{% macro device_index(p='') -%}
coalesce({{ p }}device, try_cast({{ p }}pid AS INTEGER))
{%- endmacro %}
{% macro is_conv_op(name) -%}
regexp_matches(lower({{ name }}), 'convolution|(^|::)(conv[123]d|conv_transpose[123]d|conv_tbc|_?slow_conv|thnn_conv)')
{%- endmacro %}
{% macro helpers_outside_conv(e, x='x', q='', launch_filter='TRUE') -%}
LEFT JOIN (
    SELECT l.trace_id, l.event_id
    FROM {{ q }}launches l
    JOIN {{ q }}cpu_ops op ON op.trace_id = l.trace_id AND op.event_id = l.op_event_id
    WHERE l.kind = 'kernel' AND {{ launch_filter }} AND regexp_matches(l.name, '{{ conv_helpers }}', 'i')
      AND NOT EXISTS (SELECT 1 FROM {{ q }}cpu_ops o  -- the op itself, or one around it on its thread
                      WHERE o.trace_id = op.trace_id AND o.pid = op.pid AND o.tid = op.tid
                        AND o.ts_ns <= op.ts_ns AND op.end_ns <= o.end_ns AND {{ is_conv_op('o.name') }})
) {{ x }} ON {{ x }}.trace_id = {{ e }}.trace_id AND {{ x }}.event_id = {{ e }}.event_id
{%- endmacro %}
{% macro event_category(c='c', x='x') -%}
CASE WHEN {{ x }}.event_id IS NOT NULL AND {{ c }}.category = 'conv' THEN 'elementwise' ELSE {{ c }}.category END
{%- endmacro %}
{% macro sql_items(items) -%}
{% for x in items %}'{{ x }}'{% if not loop.last %}, {% endif %}{% endfor %}
{%- endmacro %}
{% macro sql_list(items) -%}
({{ sql_items(items) }})
{%- endmacro %}
{% macro sql_array(items) -%}
[{{ sql_items(items) }}]
{%- endmacro %}

{% macro categorized(rules) -%}
SELECT c.kind, c.name, coalesce(m.category, c.category) AS category, m.category IS NOT NULL AS by_rule
FROM kernel_categories c
{%- if rules %}
LEFT JOIN (
    SELECT k.kind, k.name, arg_min(r.category, r.rule_no) AS category
    FROM kernel_categories k
    JOIN (SELECT row_number() OVER () AS rule_no, pattern, category
          FROM read_csv($rules, header = true, all_varchar = true)
          WHERE pattern IS NOT NULL AND category IS NOT NULL) r
      ON regexp_matches(k.name, r.pattern, 'i')
    GROUP BY k.kind, k.name
) m ON m.kind = c.kind AND m.name = c.name
{%- else %}
LEFT JOIN (SELECT NULL::VARCHAR AS category) m ON false
{%- endif %}
{%- endmacro %}
