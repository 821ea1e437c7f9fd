"""dtype spellings: what an "Input type" entry of a Kineto op names, its size,
and which datasheet peak applies to it."""
from __future__ import annotations

#: Every "Input type" spelling of a tensor seen in traces (C++ demangled type
#: names from c10's TypeMeta, plus older / other-platform spellings) -> canonical.
DTYPE_ALIASES: dict[str, str] = {
    "double": "fp64", "float64": "fp64",
    "float": "fp32", "float32": "fp32",
    "c10::Half": "fp16", "half": "fp16", "float16": "fp16",
    "c10::BFloat16": "bf16", "bfloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "c10::Float8_e8m0fnu": "fp8",
    "c10::Float4_e2m1fn_x2": "fp4",  # two fp4 values packed per element (1 byte)
    "long int": "int64", "long": "int64", "long long": "int64", "long long int": "int64",
    "__int64": "int64", "int64": "int64", "int64_t": "int64",
    "int": "int32", "int32": "int32",
    "short int": "int16", "short": "int16", "int16": "int16",
    "signed char": "int8", "int8": "int8", "c10::qint8": "int8",
    "unsigned char": "uint8", "uint8": "uint8", "c10::quint8": "uint8",
    "c10::quint4x2": "uint8", "c10::quint2x4": "uint8",
    "short unsigned int": "uint16", "unsigned short": "uint16", "uint16": "uint16",
    "unsigned int": "uint32", "uint32": "uint32",
    "long unsigned int": "uint64", "unsigned long": "uint64", "uint64": "uint64",
    "c10::qint32": "int32",
    "bool": "bool",
    "c10::complex<c10::Half>": "complex32",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
    # raw bit containers (torch.bits8 / bits16, and bits1x8 / 2x4 / 4x2 packed in one byte)
    "c10::bits8": "bits8", "c10::bits1x8": "bits8", "c10::bits2x4": "bits8", "c10::bits4x2": "bits8",
    "c10::bits16": "bits16",
}

#: Bytes per element of each canonical dtype.
DTYPE_BYTES: dict[str, int] = {
    "fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "fp4": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1, "bool": 1,
    "complex32": 4, "complex64": 8, "complex128": 16, "bits8": 1, "bits16": 2,
}

#: "Input type" values of arguments that are not tensors (capitalised Int/Bool/
#: Double are scalars in old traces; lower-case int/bool/double are tensors).
NON_TENSOR_TYPES = frozenset({
    "", "Scalar", "ScalarList", "GenericList", "TensorList", "Int", "Bool", "Double", "Float",
    "Long", "String", "Str", "Device", "Layout", "ScalarType", "MemoryFormat", "None", "Tuple",
    "Dict", "Generator", "Storage", "Stream", "Object", "Dimname", "QScheme", "SymInt",
    "SymFloat", "SymBool", "IntList", "BoolList", "DoubleList", "Capsule", "Future", "Enum",
})

#: Canonical peak key -> column of duckprof/data/peaks.csv.
PEAK_COLUMNS: dict[str, str] = {
    "fp64": "fp64_tflops", "fp32": "fp32_tflops", "tf32": "tf32_tflops", "bf16": "bf16_tflops",
    "fp16": "fp16_tflops", "fp8": "fp8_tflops", "fp4": "fp4_tflops", "int8": "int8_tops",
}


def peak_dtype_for(dtype: str | None, tf32: bool = False) -> str | None:
    """Which datasheet peak applies to an op of canonical ``dtype`` (a PEAK_COLUMNS key).

    fp32 ops use the plain 'fp32' peak unless ``tf32=True`` (torch's
    ``allow_tf32`` / ``set_float32_matmul_precision('high')``, which a trace does
    not record), then 'tf32'.  fp16/bf16/fp8/fp4/fp64 map to themselves; int8 and
    uint8 to 'int8' (integer tensor cores take both).  Anything else -> None.
    """
    if dtype == "fp32":
        return "tf32" if tf32 else "fp32"
    if dtype in ("fp64", "fp16", "bf16", "fp8", "fp4", "int8"):
        return dtype
    if dtype == "uint8":
        return "int8"
    return None

#: c10::ScalarType codes, as Concrete Inputs record a dtype argument
#: (``x.to(torch.bfloat16)`` -> ``"15"``) -> canonical dtype.
SCALAR_TYPE_CODES: dict[int, str] = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "fp16", 6: "fp32", 7: "fp64",
    8: "complex32", 9: "complex64", 10: "complex128", 11: "bool", 12: "int8", 13: "uint8", 14: "int32",
    15: "bf16", 16: "uint8", 17: "uint8", 18: "bits8", 19: "bits8", 20: "bits8", 21: "bits8", 22: "bits16",
    23: "fp8", 24: "fp8", 25: "fp8", 26: "fp8", 27: "uint16", 28: "uint32", 29: "uint64",
    44: "fp8", 45: "fp4",
}
