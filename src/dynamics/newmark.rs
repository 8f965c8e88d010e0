//! The implicit Newmark integrator's constants (thesis 2.7, the Newmark equations;
//! docs/equations.md), shared by the full-space and the reduced simulators.
//!
//! With Newmark parameters beta~ and gamma~ and step dt:
//! a1 = 1/(beta~ dt^2), a2 = 1/(beta~ dt), a3 = (1 - 2 beta~)/(2 beta~),
//! a4 = gamma~/(beta~ dt), a5 = 1 - gamma~/beta~, a6 = (1 - gamma~/(2 beta~)) dt, so that
//! a(t+dt) = a1 (x1 - x0) - a2 v0 - a3 a0 and v(t+dt) = a4 (x1 - x0) + a5 v0 + a6 a0.
//! beta~ = 1/4, gamma~ = 1/2 is the unconditionally stable, energy-conserving
//! average-acceleration rule (for linear systems).

/// Newmark parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewmarkParams {
    /// Time step dt (s).
    pub dt: f64,
    /// Newmark beta~ (1/4 for the average-acceleration rule).
    pub beta: f64,
    /// Newmark gamma~ (1/2 for the average-acceleration rule; larger values add numerical damping).
    pub gamma: f64,
}

impl NewmarkParams {
    /// The average-acceleration rule (beta 1/4, gamma 1/2) with step `dt`.
    pub fn average_acceleration(dt: f64) -> Self {
        NewmarkParams {
            dt,
            beta: 0.25,
            gamma: 0.5,
        }
    }

    /// The constants a1..a6 of these parameters.
    pub fn coefficients(&self) -> NewmarkCoefficients {
        let (b, g, dt) = (self.beta, self.gamma, self.dt);
        NewmarkCoefficients {
            a1: 1.0 / (b * dt * dt),
            a2: 1.0 / (b * dt),
            a3: (1.0 - 2.0 * b) / (2.0 * b),
            a4: g / (b * dt),
            a5: 1.0 - g / b,
            a6: (1.0 - g / (2.0 * b)) * dt,
        }
    }
}

/// The constants a1..a6 of the Newmark update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewmarkCoefficients {
    /// a1 = 1/(beta~ dt^2) (1/s^2).
    pub a1: f64,
    /// a2 = 1/(beta~ dt) (1/s).
    pub a2: f64,
    /// a3 = (1 - 2 beta~)/(2 beta~) (dimensionless).
    pub a3: f64,
    /// a4 = gamma~/(beta~ dt) (1/s).
    pub a4: f64,
    /// a5 = 1 - gamma~/beta~ (dimensionless).
    pub a5: f64,
    /// a6 = (1 - gamma~/(2 beta~)) dt (s).
    pub a6: f64,
}

impl NewmarkCoefficients {
    /// Acceleration at the end of the step from the displacement increment `dx`.
    #[inline]
    pub fn acceleration(&self, dx: f64, v0: f64, acc0: f64) -> f64 {
        self.a1 * dx - self.a2 * v0 - self.a3 * acc0
    }

    /// Velocity at the end of the step from the displacement increment `dx`.
    #[inline]
    pub fn velocity(&self, dx: f64, v0: f64, acc0: f64) -> f64 {
        self.a4 * dx + self.a5 * v0 + self.a6 * acc0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_acceleration_reproduces_trapezoidal_rule() {
        // For beta 1/4, gamma 1/2: x1 = x0 + dt v0 + dt^2/4 (a0 + a1) and
        // v1 = v0 + dt/2 (a0 + a1). Check the inverse maps on numbers.
        let p = NewmarkParams::average_acceleration(0.01);
        let c = p.coefficients();
        let (x0, v0, a0, a1) = (0.3, -1.2, 4.0, -2.5);
        let dt = p.dt;
        let x1 = x0 + dt * v0 + dt * dt / 4.0 * (a0 + a1);
        let v1 = v0 + dt / 2.0 * (a0 + a1);
        // Relative rounding of a1 = 4e4 times dx: 1e-10 absolute.
        assert!((c.acceleration(x1 - x0, v0, a0) - a1).abs() < 1e-9);
        assert!((c.velocity(x1 - x0, v0, a0) - v1).abs() < 1e-12);
    }
}
