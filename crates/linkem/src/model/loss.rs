//! Random loss: Bernoulli, or Gilbert-Elliott (bursty).
//!
//! Gilbert-Elliott, per packet: first the state moves (good -> bad with probability p,
//! bad -> good with probability r), then the packet is lost with the new state's loss
//! probability (loss_bad or loss_good). The chain starts in the good state. Stationary
//! loss = p/(p+r) * loss_bad + r/(p+r) * loss_good; mean bad burst = 1/r packets.

use crate::config::LossSpec;
use crate::rng::Rng;

#[derive(Debug, Clone)]
pub enum LossModel {
    None,
    Bernoulli(f64),
    GilbertElliott { p: f64, r: f64, loss_bad: f64, loss_good: f64, bad: bool },
}

impl LossModel {
    pub fn new(spec: &LossSpec) -> Self {
        match spec {
            LossSpec::None => LossModel::None,
            LossSpec::Bernoulli { probability } => LossModel::Bernoulli(*probability),
            LossSpec::GilbertElliott(g) => {
                LossModel::GilbertElliott { p: g.p, r: g.r, loss_bad: g.loss_bad, loss_good: g.loss_good, bad: false }
            }
        }
    }

    /// Decide the fate of the next packet: true = lose it.
    #[inline]
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli(p) => rng.chance(*p),
            LossModel::GilbertElliott { p, r, loss_bad, loss_good, bad } => {
                *bad = if *bad { !rng.chance(*r) } else { rng.chance(*p) };
                rng.chance(if *bad { *loss_bad } else { *loss_good })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GilbertElliott;

    fn rate(m: &mut LossModel, n: usize, seed: u64) -> f64 {
        let mut rng = Rng::new(seed);
        (0..n).filter(|_| m.lose(&mut rng)).count() as f64 / n as f64
    }

    #[test]
    fn bernoulli_rate() {
        let r = rate(&mut LossModel::new(&LossSpec::Bernoulli { probability: 0.01 }), 1_000_000, 1);
        assert!((r - 0.01).abs() < 0.0005, "{r}");
        assert_eq!(rate(&mut LossModel::None, 1000, 1), 0.0);
    }

    #[test]
    fn gilbert_elliott_stationary_loss_and_bursts() {
        let g = GilbertElliott { p: 0.01, r: 0.3, loss_bad: 0.8, loss_good: 0.001 };
        let expect = g.p / (g.p + g.r) * g.loss_bad + g.r / (g.p + g.r) * g.loss_good;
        let mut m = LossModel::new(&LossSpec::GilbertElliott(g));
        let r = rate(&mut m, 2_000_000, 5);
        assert!((r - expect).abs() < 0.002, "{r} vs {expect}");

        // bursts: with loss_bad = 1, loss_good = 0, mean run of losses = 1/r
        let g = GilbertElliott { p: 0.02, r: 0.25, loss_bad: 1.0, loss_good: 0.0 };
        let mut m = LossModel::new(&LossSpec::GilbertElliott(g));
        let mut rng = Rng::new(11);
        let (mut runs, mut lost, mut prev) = (0, 0, false);
        for _ in 0..2_000_000 {
            let l = m.lose(&mut rng);
            if l {
                lost += 1;
                if !prev {
                    runs += 1;
                }
            }
            prev = l;
        }
        let mean_run = lost as f64 / runs as f64;
        assert!((mean_run - 4.0).abs() < 0.1, "{mean_run}");
    }
}
