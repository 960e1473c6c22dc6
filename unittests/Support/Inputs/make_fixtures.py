#!/usr/bin/env python3
"""Regenerates the .npy fixtures that NpyTest.cpp reads.

Run from this directory with numpy and ml_dtypes installed
(python3 -m pip install numpy ml_dtypes):

    python3 make_fixtures.py

Made with numpy 2.4.6 and ml_dtypes 0.6.0. The values are simple enough that
NpyTest.cpp states them independently; keep the two in sync.
"""

import ml_dtypes
import numpy as np
from numpy.lib import format as npformat


def save(name, array):
    np.save(name, array)


def save_version(name, array, version):
    with open(name, "wb") as f:
        npformat.write_array(f, array, version=version)


def main():
    arange6 = np.arange(6, dtype=np.float32).reshape(2, 3)

    # One file per supported dtype.
    save("f32.npy", np.array([[1.5, -2.25, 0.0], [3.0, 0.1, -7.0]],
                             dtype=np.float32))
    save("f16.npy", np.array([1.0, -2.0, 65504.0, 2.0**-14, 2.0**-24,
                              np.inf, -np.inf, np.nan, -0.0, 1.0 / 3.0],
                             dtype=np.float16))
    # np.save writes ml_dtypes.bfloat16 with descr '<V2'.
    save("bf16.npy", np.array([[1.0, -2.5, 3.3895313892515355e38],
                               [2.0**-133, np.inf, np.nan],
                               [0.1, -0.0, 256.0]],
                              dtype=ml_dtypes.bfloat16))
    save("f64.npy", np.array([[0.1, -1e300], [5e-324, 2.5]],
                             dtype=np.float64))
    save("i32.npy", np.arange(-3, 3, dtype=np.int32).reshape(2, 3))
    save("i64.npy", np.array([0, -1, 2**40, -(2**62)], dtype=np.int64))

    # Shapes: 0-d, 1-d, empty, and a 5-d shape with a wide first dimension.
    save("scalar_f32.npy", np.array(4.5, dtype=np.float32))
    save("vector_f32.npy", np.arange(5, dtype=np.float32))
    save("empty_f32.npy", np.zeros((0, 3), dtype=np.float32))
    save("rank5_f64.npy", np.arange(100 * 2, dtype=np.float64)
         .reshape(100, 1, 2, 1, 1))

    # Format versions 2.0 and 3.0 (np.save only picks them for huge or
    # non-ASCII headers).
    save_version("v2_f32.npy", arange6, (2, 0))
    save_version("v3_f32.npy", arange6, (3, 0))

    # Files readNpy must reject.
    save("fortran_f32.npy", np.asfortranarray(arange6))
    save("bigendian_f32.npy", arange6.astype(">f4"))
    save("complex64.npy", np.zeros(3, dtype=np.complex64))
    save("float8.npy", np.zeros(3, dtype=ml_dtypes.float8_e4m3fn))
    save("structured.npy",
         np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))


if __name__ == "__main__":
    main()
