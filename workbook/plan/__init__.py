"""Plan over time: a fleet for several workloads (a portfolio file), a committed baseline and bursts."""
