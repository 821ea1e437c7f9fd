-- kernel_categories: one row per distinct device activity name (gpu_ops kind + name)
-- with a coarse category, from the name alone. Join it to gpu_ops / kernels on
-- (kind, name):
--   SELECT c.category, sum(g.dur_ns) FROM gpu_ops g JOIN kernel_categories c USING (kind, name) GROUP BY 1
--
-- Rule: the first match wins, tested in this order on lower(name) (kernels only; the last
-- five, from 'catarraybatchedcopy' on, come after normalization: they take only names that
-- no earlier rule takes, which were 'other'):
--   memcpy_htod, memcpy_dtoh, memcpy_dtod, memcpy_peer
--                       gpu_ops.kind is 'memcpy', by the direction Kineto writes in the name
--                       ('Memcpy HtoD (Pageable -> Device)', 'DtoH', 'DtoD', 'PtoP' peer-to-peer);
--   memcpy_other        a memcpy of any other direction ('HtoH', unknown; MTIA DMA transfers)
--   memset              gpu_ops.kind is 'memset'; any other non-kernel kind -> 'other'
--   communication       'nccl', 'rccl', 'all_reduce', 'allreduce', 'all_gather', 'allgather',
--                       'reduce_scatter', 'alltoall' (NCCL/RCCL collectives, p2p, symmetric memory)
--   attention           'flash_', 'flash::', 'fmha', 'attention' or 'attn' (FlashAttention,
--                       xformers, cuDNN SDPA, KV-cache kernels)
--   triton_pointwise    starts with 'triton_poi_'  (Inductor pointwise)
--   triton_reduction    starts with 'triton_red_'  (Inductor reduction)
--   triton_persistent_reduction
--                       starts with 'triton_per_'  (Inductor persistent reduction: the whole
--                       reduced dimension in one block, as the Inductor GPU-profiling doc
--                       counts it apart from 'triton_red_')
--   triton_template     starts with 'triton_tem_'  (Inductor template kernels, mostly mm)
--   triton_other        any other name starting with 'triton' (e.g. 'triton__0d1d2d')
--   conv                'convolution', 'convolve', 'conv_', 'conv2d', 'conv3d', 'winograd', 'fprop',
--                       'dgrad', 'wgrad', 'scudnn', 'im2col', MIOpen 'igemm_fwd/bwd/wrw', or composable
--                       kernel's 'xdlops_bwd_weight' / 'xdlops_bwd_data' (its convolutions' backward as
--                       a batched GEMM: kernel_batched_gemm_xdlops_bwd_weight, TraceLens's CONV_bwd)
--                       (tested before gemm: implicit-GEMM convolutions also say 'gemm'); and
--                       MIOpen's and cuDNN's helpers that they run inside their convolutions: starts with
--                       'batched_transpose_', 'transpose_nchw2cnhw' (cnhw2nchw, ...) or
--                       'subtensorop' (layout transforms; tensor set, scale and cast), or
--                       cuDNN's '[cudnn::<ns>::]nchwToNhwcKernel' / 'nhwcToNchwKernel', as
--                       TraceLens counts them (CONV_fwd / CONV_bwd, by their op); they get none
--                       of the op's FLOPs (kernel_estimates: no math kernel). That is their
--                       name's category, the one of this view; per event, one launched by an
--                       op that is no convolution nor inside one (a transpose of aten::copy_)
--                       is elementwise in the reports and kernel_estimates, which read the
--                       launching op (templates/categories.sql helpers_outside_conv,
--                       event_category)
--   gemm                'gemm' (not 'fbgemm'), 'gemv', 'cublas', 'xmma', 'nvjet', 'matmul', 'cutlass::kernel',
--                       'cutlass_<digit>', 'bmm_' at a word start, or starts with 'cijk_' (AMD Tensile)
--   elementwise         'elementwise_kernel' (vectorized_/unrolled_/index_ elementwise kernels)
--   reduction           'reduce_kernel' or 'softmax'
--   normalization       'layer_norm', 'layernorm', 'batch_norm', 'rms_norm', 'group_norm', 'bn_fw', 'bn_bw',
--                       'gammabetabackward', 'rowwisemoments'
--   elementwise         also 'catarraybatchedcopy' (torch.cat's copy kernels: a copy, as PyTorch's own
--                       strided copies, direct_copy elementwise_kernel, are; TraceLens's Elementwise)
--   embedding           embedding lookups and their gradients: FBGEMM's table-batched embeddings
--                       ('split_embedding', 'embedding_codegen': forward, backward with its fused
--                       optimizer update, grad_indice_weights), its 'permute_pooled_embs',
--                       'bounds_check_indices' and 'linearize_index_kernel' (TorchRec's DLRM-style
--                       models' main cost), torch's 'embedding_backward' and 'embeddingbag' kernels
--                       (not rotary_embedding: no lookup)
--   optimizer           'multi_tensor_apply' (the foreach kernels of torch's optimizers, on CUDA by
--                       default, and of clip_grad_norm_ / AMP's unscale around them; torch's fused
--                       Adam(W) / SGD / Adagrad; apex's, Transformer Engine's and DeepSpeed's
--                       multi_tensor_* optimizers: TraceLens's multi_tensor_apply), or a functor named
--                       for an optimizer ('adam', 'sgd', 'lamb', 'lars', 'lion', 'adagrad', 'novograd',
--                       'rmsprop'). A per-parameter (foreach=False) update runs elementwise kernels:
--                       elementwise
--   pooling             'max_pool', 'avg_pool', 'average_pool', 'adaptive_..pool', 'pooling' (torch's,
--                       cuDNN's pooling_fw/bw, MIOpen's mloPooling)
--   sort_scan           sort, scan (prefix sum), select (compaction) and top-k: cub's 'DeviceRadixSort',
--                       'DeviceSegmented(Radix)Sort', 'DeviceMergeSort', 'DeviceScan', 'DeviceSelect',
--                       'DeviceCompact', 'DeviceReduceByKey', 'DeviceRunLength' (also under torch's
--                       at_cuda_detail::cub), torch's 'radixsort', 'bitonicsort', 'mergesort',
--                       'sort_postprocess', 'segmented_sort', 'topk' and cumsum's 'tensor_kernel_scan'
--   other               everything else
-- A report can put its own rules before these (report categories / steps --rules FILE:
-- the first matching rule of the file wins; sql/templates/categories.sql, categorized).
--
-- requires: gpu_ops
--
-- Columns:
-- kind      VARCHAR  gpu_ops.kind: 'kernel', 'memcpy', 'memset', ...
-- name      VARCHAR  gpu_ops.name, the full kernel name
-- category  VARCHAR  one of the categories above
-- uses_tensor_cores  BOOLEAN  the kernel uses Tensor Cores (or AMD's Matrix Cores): its name contains
--                            one of TensorBoard's PyTorch profiler plugin's patterns (h884, s1688,
--                            hmma, xmma_gemm, ...) or of the newer kernel families the plugin predates
--                            (nvjet, tensorop, gmma, flash_fwd, fmhaSm, E4m3, Tensile's _MI..., xdlops,
--                            mfma, ...; templates/categories.sql tensor_core_kernel_patterns);
--                            false for memcpys, memsets and other activity
{% from "templates/categories.sql" import conv_helpers, uses_tensor_cores %}
CREATE OR REPLACE VIEW kernel_categories AS
SELECT kind, name,
       CASE
           WHEN kind = 'memcpy' THEN CASE WHEN contains(lname, 'htod') THEN 'memcpy_htod'
                                          WHEN contains(lname, 'dtoh') THEN 'memcpy_dtoh'
                                          WHEN contains(lname, 'dtod') THEN 'memcpy_dtod'
                                          WHEN contains(lname, 'ptop') THEN 'memcpy_peer'
                                          ELSE 'memcpy_other' END
           WHEN kind = 'memset' THEN 'memset'
           WHEN kind <> 'kernel' THEN 'other'
           WHEN regexp_matches(lname, 'nccl|rccl|all_?reduce|all_?gather|reduce_scatter|alltoall') THEN 'communication'
           WHEN regexp_matches(lname, 'flash_|flash::|fmha|attention|attn') THEN 'attention'
           WHEN starts_with(lname, 'triton_poi_') THEN 'triton_pointwise'
           WHEN starts_with(lname, 'triton_red_') THEN 'triton_reduction'
           WHEN starts_with(lname, 'triton_per_') THEN 'triton_persistent_reduction'
           WHEN starts_with(lname, 'triton_tem_') THEN 'triton_template'
           WHEN starts_with(lname, 'triton') THEN 'triton_other'
           WHEN regexp_matches(lname, '{{ conv_helpers }}') THEN 'conv'
           WHEN regexp_matches(lname, 'convolution|convolve|conv_|conv[23]d|winograd|fprop|dgrad|wgrad|scudnn|im2col|igemm_(fwd|bwd|wrw)|xdlops_bwd_(weight|data)')
               THEN 'conv'
           WHEN regexp_matches(lname, '(^|[^b])gemm|gemv|cublas|xmma|nvjet|matmul|cutlass::kernel|cutlass_[0-9]|(^|[^a-z0-9_])bmm_|^cijk_')
               THEN 'gemm'
           WHEN contains(lname, 'elementwise_kernel') THEN 'elementwise'
           WHEN contains(lname, 'reduce_kernel') OR contains(lname, 'softmax') THEN 'reduction'
           WHEN regexp_matches(lname, 'layer_?norm|batch_norm|rms_norm|group_norm|bn_fw|bn_bw|gammabetabackward|rowwisemoments')
               THEN 'normalization'
           WHEN contains(lname, 'catarraybatchedcopy') THEN 'elementwise'
           WHEN regexp_matches(lname, 'split_embedding|embedding_codegen|embedding_?bag|embedding_backward|permute_pooled_embs|bounds_check_indices|linearize_index_kernel')
               THEN 'embedding'
           WHEN regexp_matches(lname, 'multi_tensor_apply|(adam|sgd|lars|lion|adagrad|novograd|rmsprop)[a-z0-9_]*functor|lamb(stage[0-9])?functor')
               THEN 'optimizer'
           WHEN regexp_matches(lname, '(max|avg|average)_?pool|adaptive_[a-z0-9_]*pool|pooling') THEN 'pooling'
           WHEN regexp_matches(lname, 'cub::device(radix_?sort|segmented_?(radix_?)?sort|merge_?sort|scan|select|compact|reduce_?by_?key|run_?length)|radix_?sort|bitonic_?sort|merge_?sort|sort_postprocess|segmented_sort|topk|tensor_kernel_scan')
               THEN 'sort_scan'
           ELSE 'other'
       END AS category,
       kind = 'kernel' AND {{ uses_tensor_cores() }} AS uses_tensor_cores
FROM (SELECT kind, name, lower(name) AS lname
      FROM (SELECT DISTINCT kind, name FROM gpu_ops));
