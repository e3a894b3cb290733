r"""
# Your first model

A two-state switch whose rates depend on a slow variable y: the fast state x is the
probability of each state, and y is pulled towards twice the probability of state 0,

$$
\varepsilon\,\dot x = Q(y)^\top x, \qquad
Q(y) = \begin{pmatrix} -e^{y} & e^{y} \\ 1 & -1 \end{pmatrix}, \qquad
\dot y = 2x_0 - y, \qquad \varepsilon = \frac{1}{100}.
$$

`sp_ode.simulate` solves it, `sp_ode.verify` checks the reduction (the fast state sits on
the stationary distribution p_st(y), and the errors fall like ε), and the plot shows the
fast and the slow variable.  This is the program of the Getting started page.
"""
# %%
import jax.numpy as jnp
import matplotlib.pyplot as plt

import sp_ode


def Q(y):  # the generator: state 0 -> 1 at rate e^y, state 1 -> 0 at rate 1
    return jnp.array([[-jnp.exp(y[0]), jnp.exp(y[0])], [1.0, -1.0]])


def g(x, y):  # y relaxes towards twice the probability of state 0
    return jnp.array([2 * x[0] - y[0]])


system = sp_ode.MasterEquationSystem(Q, g, P=100, name="switch")  # ε = 1/P
start = dict(t_span=(0.0, 3.0), x0=[0.0, 1.0], y0=[0.0])
trajectory = sp_ode.simulate(system, **start)
print("x(3) =", trajectory.x[-1])
print("p_st(y(3)) =", sp_ode.stationary_distribution(Q(trajectory.y[-1])))
print(sp_ode.verify(system, **start, description="a two-state switch"))

# %%
fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
ax.plot(trajectory.t, trajectory.x[:, 0], label="fast: x₀, probability of state 0")
ax.plot(trajectory.t, trajectory.y[:, 0], label="slow: y")
ax.set_xlabel("time t")
ax.legend()
plt.show()
