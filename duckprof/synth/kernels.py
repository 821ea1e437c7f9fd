"""Kernel names, as cuBLAS / cuDNN / ATen / flash-attention / NCCL emit them."""

from __future__ import annotations

def _vec(functor, n, width=4):
    return ("void at::native::vectorized_elementwise_kernel<%d, %s, std::array<char*, %dul> >"
            "(int, %s, std::array<char*, %dul>)" % (width, functor, n, functor, n))


K = {
    "gemm_big": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
    "gemm_mid": ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8>"
                 "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8::Params)"),
    "gemm_nn": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn",
    "gemm_nt": "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nt",
    "gemm_nt_small": "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nt",
    "gemm_head": "ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_stages_64x5_tn",
    "gemm_head_nn": "ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_stages_64x5_nn",
    "splitk_bf16": ("void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>"
                    "(cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, "
                    "float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)"),
    "splitk_half": ("void splitKreduce_kernel<32, 16, int, float, __half, float, __half, true, false, false>"
                    "(cublasSplitKParams<float>, float const*, __half const*, __half*, float const*, float const*, "
                    "__half const*, float const*, __half*, void*, long, float*, int*)"),
    "n2n": ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>"
            "(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)"),
    "nhwc2nchw": ("void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>"
                  "(cudnn::ops::nhwc2nchw_params_t<float>, float const*, float*)"),
    "fprop": ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
              "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"),
    "dgrad": ("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
              "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"),
    "wgrad": ("sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_"
              "warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train"),
    "relu": ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar"
             "(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::"
             "operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
             "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
             "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
             "{lambda(float)#1}, std::array<char*, 2ul>)"),
    "relu_bwd": _vec("at::native::BinaryFunctor<float, float, float, at::native::(anonymous namespace)::"
                     "threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}>", 3),
    "add_f32": _vec("at::native::CUDAFunctor_add<float>", 3),
    "add_bf16": _vec("at::native::CUDAFunctor_add<c10::BFloat16>", 3),
    "gelu": _vec("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
                 "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}", 2),
    "gelu_bwd": _vec("at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
                     "{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
                     "{lambda(c10::BFloat16, c10::BFloat16)#1}", 3),
    "to_bf16": ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
                "::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, "
                "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
                "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
                "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
                "{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, "
                "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
                "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"),
    "ln": ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
           "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"),
    "ln_bwd_in": ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>"
                  "(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, "
                  "c10::BFloat16*, int)"),
    "ln_bwd_gb": ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>"
                  "(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
                  "c10::BFloat16*, c10::BFloat16*)"),
    "flash_fwd": ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
                  "false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
                  "false, false, false, false, false, true, false>(pytorch_flash::Flash_fwd_params)"),
    "flash_bwd_dot": ("void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, "
                      "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, "
                      "128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)"),
    "flash_bwd": ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits"
                  "<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, "
                  "128, 128, 8, cutlass::bfloat16_t> >, false, false, false, false, false, false>"
                  "(pytorch_flash::Flash_bwd_params)"),
    "flash_bwd_cvt": ("void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, "
                      "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, "
                      "128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params, int)"),
    "sum_bf16": ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t"
                 "<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()"
                 "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4> >"
                 "(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, "
                 "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::"
                 "{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4>)"),
    "sum_f32": ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
                "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
                "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
                "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
                "unsigned int, float, 4>)"),
    "mean_bf16": ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, "
                  "float, float, float>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, "
                  "at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4>)"),
    "logsoftmax": ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
                   "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"),
    "nll": ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, "
            "float*, float const*, long const*, float const*, bool, long, long, long, long)"),
    "nll_bwd": ("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, "
                "float const*, long const*, float const*, float const*, bool, int, int, long, long)"),
    "logsoftmax_bwd": ("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
                       "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, "
                       "float const*, long)"),
    "fill_f32": _vec("at::native::FillFunctor<float>", 1),
    "foreach_norm": ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
                     "::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, "
                     "(at::native::(anonymous namespace)::NormType)1, float, float>, float*, int>(at::native::"
                     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor"
                     "<float, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int)"),
    "foreach_mul": ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
                    "::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, "
                    "std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, "
                    "at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, "
                    "float)"),
    "adamw": ("void at::native::(anonymous namespace)::multi_tensor_apply_for_fused_optimizer<4, "
              "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, "
              "float*, double, double, double, double, double, bool, bool, float*, float*>"),
    "nccl": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
}
