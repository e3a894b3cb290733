"""Importing this enables float64 in JAX (sp_ode computes in float64 everywhere)."""
import jax

jax.config.update("jax_enable_x64", True)
