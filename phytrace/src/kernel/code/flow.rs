//! Which writes of a register reach an instruction: the function's control flow walked
//! backwards from it, through the branches inside the function. phylib's code keeps a driver
//! pointer in a register across blocks that the compiler lays out far apart (`phy_probe` loads
//! `phydrv` a hundred instructions before the block calling `phydrv->get_features`, with
//! another use of that register between them in the layout).

/// Most instructions one search visits.
const BUDGET: usize = 4096;

/// The predecessors of each instruction of one function.
pub struct Flow {
    preds: Vec<Vec<usize>>,
}

impl Flow {
    /// The flow of a function whose instruction `i` may pass control to `successors(i)`
    /// (instructions of the same function, by index).
    pub fn new(len: usize, successors: impl Fn(usize) -> Vec<usize>) -> Self {
        let mut preds = vec![Vec::new(); len];
        for from in 0..len {
            for to in successors(from) {
                if let Some(list) = preds.get_mut(to) {
                    list.push(from);
                }
            }
        }
        Self { preds }
    }

    /// The instructions for which `writes` holds that reach instruction `at` on some path
    /// without another such write between. `None` if a path reaches the function's entry
    /// first (the value is the caller's), if none is found, or if the search is too long.
    /// Paths from code without predecessors (reached through a jump table, or dead) are not
    /// followed.
    pub fn reaching(&self, at: usize, writes: impl Fn(usize) -> bool) -> Option<Vec<usize>> {
        let mut found = Vec::new();
        let mut seen = vec![false; self.preds.len()];
        let mut stack: Vec<usize> = self.preds.get(at)?.clone();
        let mut visited = 0;
        while let Some(node) = stack.pop() {
            if std::mem::replace(&mut seen[node], true) {
                continue;
            }
            visited += 1;
            if visited > BUDGET {
                return None;
            }
            if writes(node) {
                found.push(node);
            } else if node == 0 {
                return None;
            } else {
                stack.extend(&self.preds[node]);
            }
        }
        (!found.is_empty()).then(|| {
            found.sort_unstable();
            found
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0: write; 1: branch to 3; 2: write (skipped by the branch); 3: join; 4: use.
    fn diamond() -> Flow {
        Flow::new(5, |i| match i {
            1 => vec![2, 3],
            4 => vec![],
            i => vec![i + 1],
        })
    }

    #[test]
    fn every_write_reaching_the_use_is_found() {
        assert_eq!(
            diamond().reaching(4, |i| i == 0 || i == 2),
            Some(vec![0, 2])
        );
        assert_eq!(
            diamond().reaching(4, |i| i == 2),
            None,
            "the entry reaches it unwritten"
        );
    }

    #[test]
    fn a_write_laid_out_between_but_not_on_the_path_is_not_taken() {
        // 0: write; 1: branch to 4; 2: other write (another block); 3: return; 4: use.
        let flow = Flow::new(5, |i| match i {
            1 => vec![2, 4],
            3 | 4 => vec![],
            i => vec![i + 1],
        });
        assert_eq!(flow.reaching(4, |i| i == 0 || i == 2), Some(vec![0]));
    }
}
