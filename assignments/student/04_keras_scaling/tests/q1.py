from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_tf_config(tf_config):
    assert isinstance(tf_config, dict), 'tf_config is not a dict yet: replace ... with a dict'
    assert set(tf_config) == {'cluster', 'task'}, 'a TF_CONFIG has two keys: cluster and task'

