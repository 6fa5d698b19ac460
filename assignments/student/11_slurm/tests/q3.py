from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_slurm_tf_config(slurm_tf_config):
    got = slurm_tf_config(['node8', 'node9'], 0, 20017)
    assert got is not None, 'returns None: replace ... with your code'
    assert got['cluster'] == {'worker': ['node8:20017', 'node9:20017']}, f"two workers, host:port in Slurm's order; got {got}"

